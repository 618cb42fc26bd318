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

#include <cstdint>

namespace switchyard::te {

void validate_norm_problem(const sy_norm_problem* problem);
const sy_norm_problem& norm_problem_of(const sy_norm_forward_args* args);
const sy_norm_problem& norm_problem_of(const sy_norm_backward_args* args);
void validate_norm_forward(const sy_norm_forward_args& args);
void validate_norm_backward(const sy_norm_backward_args& args, int64_t required_workspace_bytes);

const char* norm_kind_name(sy_norm_kind kind);  // "LayerNorm", "RMSNorm", "L2Norm"

}  // namespace switchyard::te

#endif
