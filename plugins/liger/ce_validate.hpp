// Cross-entropy argument checking for liger: everything decided from the problem and the
// tensor descriptors, before any CUDA call, so that refusals need no GPU. Throws sy::Failure
// naming the argument, what was given and what is expected.
#ifndef SWITCHYARD_LIGER_CE_VALIDATE_HPP
#define SWITCHYARD_LIGER_CE_VALIDATE_HPP

#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::liger {

// The problem alone (supports()): geometry, dtypes, flags, smoothing, device.
void validate_ce_problem(const sy_ce_problem* problem);

const sy_ce_problem& ce_problem_of(const sy_ce_forward_args* args);
const sy_ce_problem& ce_problem_of(const sy_ce_backward_args* args);

// Every tensor's presence, device, dtype, shape and strides, aliasing, the communicator and
// the workspace. Call after validate_ce_problem.
void validate_ce_forward(const sy_ce_forward_args* args);
void validate_ce_backward(const sy_ce_backward_args* args);

}  // namespace switchyard::liger

#endif
