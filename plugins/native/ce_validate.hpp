// Device-independent argument checking for cross entropy: everything that can be decided
// from the problem and the tensor descriptors without reading tensor data. The ABI's rules
// are the SDK's (<switchyard/ce_checks.hpp>); what is added here is native's: the collective
// it needs, its aliasing rule and its workspace. Every function throws sy::Failure with a
// message that names the argument, what was given and what is expected.
#ifndef SWITCHYARD_NATIVE_CE_VALIDATE_HPP
#define SWITCHYARD_NATIVE_CE_VALIDATE_HPP

#include <switchyard/ce_checks.hpp>
#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::native {

// The problem alone: geometry, dtypes, flags, smoothing. INVALID_ARGUMENT for a request that
// cannot mean anything, UNSUPPORTED for a valid one this plugin does not implement. Devices
// are the dispatcher's business (plugin.cpp).
void validate_ce_problem(const sy_ce_problem* problem);

// Forward arguments (after validate_ce_problem on args->problem): every tensor's presence,
// device, dtype, shape and strides, the communicator, aliasing and the workspace size.
void validate_ce_forward(const sy_ce_forward_args* args, int64_t required_workspace_bytes);

// Backward arguments (after validate_ce_problem). The backward uses no workspace.
void validate_ce_backward(const sy_ce_backward_args* args);

// The args struct and its problem pointer, before anything else is read.
using sy::ce_problem_of;

}  // namespace switchyard::native

#endif
