// Cross entropy on the CPU: Megatron's eager vocab-parallel algorithm, op by op, over rows in
// parallel. Arguments must have passed ce_validate first.
#ifndef SWITCHYARD_NATIVE_CE_CPU_HPP
#define SWITCHYARD_NATIVE_CE_CPU_HPP

#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::native {

// The fp32 copy of the logits (N x Vp) plus per-row statistics, aligned.
int64_t ce_cpu_workspace_bytes(const sy_ce_problem& problem);

void ce_cpu_forward(const sy_ce_forward_args& args);
void ce_cpu_backward(const sy_ce_backward_args& args);

// Collectives one forward issues: 3 all-reduces (max, target logit [+ sum of logits], sum of
// exponentials) for tp_size > 1, plus one with SY_CE_ARGMAX; none for tp_size == 1.
int32_t ce_cpu_forward_collectives(const sy_ce_problem& problem);

}  // namespace switchyard::native

#endif
