// Everything te checks about a cross-entropy request before it touches the GPU: the problem
// (supports), then the tensors of a call. Each function throws sy::Failure with a sentence
// naming the argument, what was given and what is expected.
#ifndef SWITCHYARD_TE_CE_VALIDATE_HPP
#define SWITCHYARD_TE_CE_VALIDATE_HPP

#include <switchyard/ce_checks.hpp>
#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::te {

// INVALID_ARGUMENT for a request that cannot mean anything, UNSUPPORTED for a valid one te
// does not serve (a CPU device, float64, SY_CE_CHECK_LABELS, ...). The ABI's rules are the
// SDK's (<switchyard/ce_checks.hpp>); te adds what it serves.
void validate_ce_problem(const sy_ce_problem* problem);

// The args struct and its problem pointer, before anything else is read.
using sy::ce_problem_of;

// After validate_ce_problem: every tensor's presence, device, dtype, shape, strides,
// alignment and aliasing, the communicator and the workspace.
void validate_ce_forward(const sy_ce_forward_args& args, int64_t required_workspace_bytes);
void validate_ce_backward(const sy_ce_backward_args& args);

}  // namespace switchyard::te

#endif
