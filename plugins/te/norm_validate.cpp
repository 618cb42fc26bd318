#include "norm_validate.hpp"

#include "norm_plan.hpp"
#include "tensor_checks.hpp"

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/tensor_layout.hpp>

#include <string>

namespace switchyard::te {

void validate_norm_problem(const sy_norm_problem* problem) {
  sy::check_norm_problem(problem, "te");
  const sy_norm_problem& p = *problem;
  sy::require_known_norm_flags(p.flags, "te");
  if (p.device.device_type != kDLCUDA)
    sy::fail(SY_ERR_UNSUPPORTED, "problem.device = " + sy::device_name(p.device) +
                                     ": te runs on CUDA tensors only (cuda:N); use native for "
                                     "CPU tensors");
  if (p.hidden > kNormMaxHidden)
    sy::fail(SY_ERR_UNSUPPORTED,
             "problem.hidden = " + std::to_string(p.hidden) + " exceeds te's limit of " +
                 std::to_string(kNormMaxHidden) +
                 " (a row is kept in the registers of at most 512 threads); use apex or native "
                 "for wider rows");
}

void validate_norm_forward(const sy_norm_forward_args& args) {
  sy::check_norm_forward_tensors(args, require_element_aligned);
  require_same_or_disjoint(args.y, "y", args.x, "x");
  require_same_or_disjoint(args.residual_out, "residual_out", args.x, "x");
  require_same_or_disjoint(args.residual_out, "residual_out", args.residual, "residual");
  require_same_or_disjoint(args.y, "y", args.residual, "residual");
  sy::require_disjoint(args.y, "y", args.residual_out, "residual_out");
}

void validate_norm_backward(const sy_norm_backward_args& args, int64_t required_workspace_bytes) {
  sy::check_norm_backward_tensors(args, require_element_aligned);
  sy::require_disjoint(args.dweight, "dweight", args.dbias, "dbias");
  require_same_or_disjoint(args.dx, "dx", args.dy, "dy");
  require_same_or_disjoint(args.dx, "dx", args.x_or_y, "x_or_y");
  require_same_or_disjoint(args.dx, "dx", args.d_residual_out, "d_residual_out");
  require_workspace(args.workspace, args.workspace_bytes, required_workspace_bytes);
}

}  // namespace switchyard::te
