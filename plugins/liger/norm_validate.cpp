#include "norm_validate.hpp"

#include "common_checks.hpp"
#include "kernels/launch.hpp"

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/tensor_layout.hpp>

#include <string>

namespace switchyard::liger {

NormWorkspaceLayout norm_workspace_layout(const sy_norm_problem& p) {
  NormWorkspaceLayout layout;
  layout.rows_per_block = norm_rows_per_block(p.rows, p.hidden);
  layout.blocks = norm_backward_blocks(p.rows, layout.rows_per_block);
  if (p.kind == SY_NORM_L2 || p.rows == 0) return layout;
  const int64_t blocks = layout.blocks;
  const int64_t bytes = sy::align_up(
      sy::checked_multiply(sy::checked_multiply(blocks, p.hidden, "blocks x hidden"), 4,
                           "the dgamma partial sums"),
      256);
  layout.dweight_partial = 0;
  layout.total = bytes;
  if (p.kind == SY_NORM_LAYER) {
    layout.dbias_partial = bytes;
    layout.total = 2 * bytes;
  }
  return layout;
}

void validate_norm_problem(const sy_norm_problem* problem) {
  sy::check_norm_problem(problem, "liger");
  const sy_norm_problem& p = *problem;
  sy::require_known_norm_flags(p.flags, "liger");
  require_cuda_problem_device(p.device);
  if (p.sm_margin > 0)
    sy::fail(SY_ERR_UNSUPPORTED,
             "problem.sm_margin = " + str(p.sm_margin) +
                 ": liger does not implement an SM margin (its row kernels spread over the "
                 "whole GPU, as Liger's do); pass sm_margin = 0 or use te, which declares "
                 "SY_NORM_FEATURE_SM_MARGIN");
  require_row_count(p.rows);
  const bool beta = p.kind == SY_NORM_LAYER;
  const int64_t shared = norm_backward_shared_bytes(p.hidden, p.kind != SY_NORM_L2, beta);
  if (shared > kMaxDynamicSharedBytes)
    sy::fail(SY_ERR_UNSUPPORTED,
             "problem.hidden = " + str(p.hidden) + " is too large for liger's " +
                 norm_kind_name(p.kind) + " backward: each block keeps its dgamma" +
                 (beta ? "/dbeta" : "") + " column sums in shared memory, " + str(shared) +
                 " bytes, over the " + str(kMaxDynamicSharedBytes) +
                 " bytes a Hopper block may use; use te or apex for this hidden size");
  (void)norm_workspace_layout(p);
}

void validate_norm_forward(const sy_norm_forward_args* args) {
  norm_problem_of(args);
  sy::check_norm_forward_tensors(*args);
  sy::check_norm_forward_aliasing(*args);
  // y = x in place with a residual: the last pass reads h from residual_out, never x again.
}

void validate_norm_backward(const sy_norm_backward_args* args) {
  const sy_norm_problem& p = norm_problem_of(args);
  sy::check_norm_backward_tensors(*args);
  sy::check_norm_backward_aliasing(*args);
  sy::require_disjoint(args->dx, "dx", args->dweight, "dweight");
  sy::require_disjoint(args->dx, "dx", args->dbias, "dbias");
  require_workspace(args->workspace, args->workspace_bytes, norm_workspace_layout(p).total);
}

}  // namespace switchyard::liger
