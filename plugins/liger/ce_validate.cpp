#include "ce_validate.hpp"

#include "ce_workspace.hpp"
#include "common_checks.hpp"

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/tensor_layout.hpp>

namespace switchyard::liger {

void validate_ce_problem(const sy_ce_problem* problem) {
  sy::check_ce_problem(problem, "liger");
  const sy_ce_problem& p = *problem;
  sy::require_known_ce_flags(p.flags, "liger");
  require_cuda_problem_device(p.device);
  require_row_count(p.rows);
  (void)ce_workspace_layout(p);  // refuses sizes whose scratch would overflow
}

void validate_ce_forward(const sy_ce_forward_args* args) {
  const sy_ce_problem& p = ce_problem_of(args);
  sy::check_ce_forward_tensors(*args);
  if ((p.flags & SY_CE_GRAD_IN_FORWARD) != 0)
    sy::require_same_or_disjoint(args->grad_logits, "grad_logits", args->logits, "logits");
  sy::check_ce_comm(args->tp, p, sy::Collective::AllReduce, "liger");
  require_workspace(args->workspace, args->workspace_bytes, ce_workspace_layout(p).total);
}

void validate_ce_backward(const sy_ce_backward_args* args) {
  ce_problem_of(args);
  sy::check_ce_backward_tensors(*args);
  sy::require_same_or_disjoint(args->grad_logits, "grad_logits", args->logits, "logits");
}

}  // namespace switchyard::liger
