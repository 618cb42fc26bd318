// Cross-entropy argument checking for liger: everything decided from the problem and the
// tensor descriptors, before any CUDA call, so that refusals need no GPU. The ABI's rules are
// the SDK's (<switchyard/ce_checks.hpp>); liger adds its devices, row limit, aliasing rule and
// workspace. Throws sy::Failure naming the argument, what was given and what is expected.
#ifndef SWITCHYARD_LIGER_CE_VALIDATE_HPP
#define SWITCHYARD_LIGER_CE_VALIDATE_HPP

#include <switchyard/ce_checks.hpp>
#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::liger {

// The problem alone (supports()): geometry, dtypes, flags, smoothing, device.
void validate_ce_problem(const sy_ce_problem* problem);

// The args struct and its problem pointer, before anything else is read.
using sy::ce_problem_of;

// Every tensor's presence, device, dtype, shape and strides, aliasing, the communicator and
// the workspace. Call after validate_ce_problem.
void validate_ce_forward(const sy_ce_forward_args* args);
void validate_ce_backward(const sy_ce_backward_args* args);

}  // namespace switchyard::liger

#endif
