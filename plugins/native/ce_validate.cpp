#include "ce_validate.hpp"

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/tensor_layout.hpp>

namespace switchyard::native {

void validate_ce_problem(const sy_ce_problem* problem) {
  sy::check_ce_problem(problem, "native");
  sy::require_known_ce_flags(problem->flags, "native");
}

void validate_ce_forward(const sy_ce_forward_args* args, int64_t required_workspace_bytes) {
  const sy_ce_problem& p = ce_problem_of(args);
  sy::check_ce_forward_tensors(*args);
  if ((p.flags & SY_CE_GRAD_IN_FORWARD) != 0)
    sy::require_same_or_disjoint(args->grad_logits, "grad_logits", args->logits, "logits");
  sy::check_ce_comm(args->tp, p, sy::Collective::AllReduce, "native");
  sy::require_workspace(args->workspace, args->workspace_bytes, required_workspace_bytes,
                        "native");
}

void validate_ce_backward(const sy_ce_backward_args* args) {
  ce_problem_of(args);
  sy::check_ce_backward_tensors(*args);
  sy::require_same_or_disjoint(args->grad_logits, "grad_logits", args->logits, "logits");
}

}  // namespace switchyard::native
