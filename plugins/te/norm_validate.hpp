// Everything te checks about a normalization request before it touches the GPU. Throws
// sy::Failure naming the argument, what was given and what is expected.
//
// Choices (README.md, "Normalization"): L2Norm has no gamma/beta (weight, bias, dweight, dbias
// must be NULL); RMSNorm has no beta; LayerNorm's bias is optional and dbias may be asked
// without it; mean is written by LayerNorm only; exact aliasing (in place) is allowed for
// y = x, residual_out = x or residual, dx = dy, x_or_y or d_residual_out.
#ifndef SWITCHYARD_TE_NORM_VALIDATE_HPP
#define SWITCHYARD_TE_NORM_VALIDATE_HPP

#include <switchyard/norm.h>
#include <switchyard/norm_checks.hpp>

#include <cstdint>

namespace switchyard::te {

// The ABI's rules are the SDK's (<switchyard/norm_checks.hpp>); te adds its devices, its
// hidden-size limit, element alignment, its aliasing rules and the backward's workspace.
void validate_norm_problem(const sy_norm_problem* problem);
using sy::norm_problem_of;
void validate_norm_forward(const sy_norm_forward_args& args);
void validate_norm_backward(const sy_norm_backward_args& args, int64_t required_workspace_bytes);

using sy::norm_kind_name;  // "LayerNorm", "RMSNorm", "L2Norm"

}  // namespace switchyard::te

#endif
