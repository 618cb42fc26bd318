// te's cross-entropy entry points after the ABI boundary: validate, then enqueue the kernels
// (and the one all-gather) on the caller's stream. Throw sy::Failure on any refusal.
#ifndef SWITCHYARD_TE_CE_OPS_HPP
#define SWITCHYARD_TE_CE_OPS_HPP

#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::te {

int64_t ce_workspace_bytes(const sy_ce_problem& problem);  // after validate_ce_problem
void ce_forward(const sy_ce_forward_args& args);            // after validate_ce_problem
void ce_backward(const sy_ce_backward_args& args);          // after validate_ce_problem

}  // namespace switchyard::te

#endif
