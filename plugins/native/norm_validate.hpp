// Device-independent argument checking for LayerNorm / RMSNorm / L2Norm: everything that can
// be decided from the problem and the tensor descriptors. The ABI's rules are the SDK's
// (<switchyard/norm_checks.hpp>); native adds its aliasing rules and its workspace. Throws
// sy::Failure naming the argument, what was given and what is expected.
//
// Choices (documented in plugins/native/README.md):
//   - L2Norm has no gamma/beta: weight, bias, dweight and dbias must be NULL (refused, since a
//     silently ignored weight would be a wrong result); ZERO_CENTERED_GAMMA and
//     ACCUMULATE_GRAD_WEIGHT are accepted and have nothing to act on.
//   - RMSNorm has no beta: bias and dbias are refused.
//   - mean is written by LayerNorm only; a mean tensor passed to RMS/L2 is left untouched.
//   - sm_margin (SMs to leave free) has no meaning on the CPU: any value >= 0 is accepted and
//     ignored; SY_NORM_FEATURE_SM_MARGIN is not claimed.
//   - Exact aliasing (in place) is allowed for y = x, residual_out = x or residual, dx = dy or
//     x_or_y; partial overlaps are refused.
#ifndef SWITCHYARD_NATIVE_NORM_VALIDATE_HPP
#define SWITCHYARD_NATIVE_NORM_VALIDATE_HPP

#include <switchyard/norm.h>
#include <switchyard/norm_checks.hpp>

#include <cstdint>

namespace switchyard::native {

void validate_norm_problem(const sy_norm_problem* problem);
void validate_norm_forward(const sy_norm_forward_args* args, int64_t required_workspace_bytes);
void validate_norm_backward(const sy_norm_backward_args* args, int64_t required_workspace_bytes);

using sy::norm_kind_name;  // "LayerNorm", "RMSNorm", "L2Norm"
using sy::norm_problem_of;

}  // namespace switchyard::native

#endif
