#include "norm_validate.hpp"

#include "jit/norm_source.hpp"
#include "problem_device.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <string>

namespace switchyard::fused {

void validate_norm_problem(const sy_norm_problem* problem) {
  sy::check_norm_problem(problem, "fused");
  const sy_norm_problem& p = *problem;
  sy::require_known_norm_flags(p.flags, "fused");
  require_cuda_problem_device(p.device);
  if (p.hidden > jit::NormLayout::kMaxHidden)
    sy::unsupported("problem.hidden = " + std::to_string(p.hidden) + " exceeds the " +
                    std::to_string(jit::NormLayout::kMaxHidden) +
                    " values fused keeps of a row in one block's registers; use native or te "
                    "for wider rows");
  if (p.rows > kMaxNormRows)
    sy::unsupported("problem.rows = " + std::to_string(p.rows) + " exceeds the " +
                    std::to_string(kMaxNormRows) +
                    " rows one call of fused handles; split the batch");
}

void validate_norm_forward(const sy_norm_forward_args* args, int64_t required_workspace_bytes) {
  norm_problem_of(args);
  sy::check_norm_forward_tensors(*args);
  sy::check_norm_forward_aliasing(*args);
  sy::require_workspace(args->workspace, args->workspace_bytes, required_workspace_bytes,
                        "fused");
}

void validate_norm_backward(const sy_norm_backward_args* args, int64_t required_workspace_bytes) {
  norm_problem_of(args);
  sy::check_norm_backward_tensors(*args);
  sy::check_norm_backward_aliasing(*args);
  sy::require_workspace(args->workspace, args->workspace_bytes, required_workspace_bytes,
                        "fused");
}

}  // namespace switchyard::fused
