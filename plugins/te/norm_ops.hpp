// te's normalization entry points after the ABI boundary: validate, then enqueue the kernels on
// the caller's stream. Throw sy::Failure on any refusal.
#ifndef SWITCHYARD_TE_NORM_OPS_HPP
#define SWITCHYARD_TE_NORM_OPS_HPP

#include <switchyard/norm.h>

#include <cstdint>

namespace switchyard::te {

int64_t norm_workspace_bytes(const sy_norm_problem& problem);  // after validate_norm_problem
void norm_forward(const sy_norm_forward_args& args);            // after validate_norm_problem
void norm_backward(const sy_norm_backward_args& args);          // after validate_norm_problem

// supports(): refuses an sm_margin that leaves no multiprocessor when the device can be asked
// (nothing is checked on a machine where CUDA cannot run: probe says why).
void check_sm_margin_if_possible(const sy_norm_problem& problem);

}  // namespace switchyard::te

#endif
