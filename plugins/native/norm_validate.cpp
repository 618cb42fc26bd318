#include "norm_validate.hpp"

#include <switchyard/plugin_helpers.hpp>

namespace switchyard::native {

void validate_norm_problem(const sy_norm_problem* problem) {
  sy::check_norm_problem(problem, "native");
  sy::require_known_norm_flags(problem->flags, "native");
}

void validate_norm_forward(const sy_norm_forward_args* args, int64_t required_workspace_bytes) {
  norm_problem_of(args);
  sy::check_norm_forward_tensors(*args);
  sy::check_norm_forward_aliasing(*args);
  sy::require_workspace(args->workspace, args->workspace_bytes, required_workspace_bytes,
                        "native");
}

void validate_norm_backward(const sy_norm_backward_args* args, int64_t required_workspace_bytes) {
  norm_problem_of(args);
  sy::check_norm_backward_tensors(*args);
  sy::check_norm_backward_aliasing(*args);
  sy::require_workspace(args->workspace, args->workspace_bytes, required_workspace_bytes,
                        "native");
}

}  // namespace switchyard::native
