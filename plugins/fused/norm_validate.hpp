// Normalization argument checking: everything decidable from the problem and the tensor
// descriptors without reading tensor data. The ABI's rules are the SDK's
// (<switchyard/norm_checks.hpp>); fused adds its devices, limits, aliasing rules and workspace.
// Throws sy::Failure naming the argument.
#ifndef SWITCHYARD_FUSED_NORM_VALIDATE_HPP
#define SWITCHYARD_FUSED_NORM_VALIDATE_HPP

#include <switchyard/norm.h>
#include <switchyard/norm_checks.hpp>

#include <cstdint>

namespace switchyard::fused {

inline constexpr int64_t kMaxNormRows = 2147483647;  // rows are grid.x

using sy::norm_kind_name;  // "LayerNorm", "RMSNorm", "L2Norm"

void validate_norm_problem(const sy_norm_problem* problem);

using sy::norm_problem_of;

void validate_norm_forward(const sy_norm_forward_args* args, int64_t required_workspace_bytes);
void validate_norm_backward(const sy_norm_backward_args* args, int64_t required_workspace_bytes);

}  // namespace switchyard::fused

#endif  // SWITCHYARD_FUSED_NORM_VALIDATE_HPP
