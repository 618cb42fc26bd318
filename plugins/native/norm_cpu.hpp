// LayerNorm / RMSNorm / L2Norm on the CPU. Arguments must have passed norm_validate first.
//
// Per row, all arithmetic is in double (row sums accumulated in column order) and every output
// is rounded once to its dtype; mean and rstd are written as float32. Rows are independent, so
// y, dx, mean and rstd of a row depend on that row alone. dgamma/dbeta are summed over rows in
// row order per column, with columns split into blocks across threads, so they are
// bit-identical for any number of threads.
#ifndef SWITCHYARD_NATIVE_NORM_CPU_HPP
#define SWITCHYARD_NATIVE_NORM_CPU_HPP

#include <switchyard/norm.h>

#include <cstdint>

namespace switchyard::native {

// gamma_eff and beta of the call, as doubles.
int64_t norm_cpu_workspace_bytes(const sy_norm_problem& problem);

void norm_cpu_forward(const sy_norm_forward_args& args);
void norm_cpu_backward(const sy_norm_backward_args& args);

}  // namespace switchyard::native

#endif
