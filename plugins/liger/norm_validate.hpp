// Norm argument checking for liger, before any CUDA call. Throws sy::Failure naming the
// argument, what was given and what is expected.
//
// Choices (README.md, "Normalization"): L2Norm has no gamma/beta (weight, bias, dweight,
// dbias refused); RMSNorm has no beta; sm_margin > 0 is refused (not implemented: every call
// uses the whole GPU); hidden sizes whose per-block dgamma/dbeta sums exceed Hopper's shared
// memory are refused; exact aliasing (in place) is allowed for y = x, residual_out = x or
// residual, dx = dy, x_or_y or d_residual_out.
#ifndef SWITCHYARD_LIGER_NORM_VALIDATE_HPP
#define SWITCHYARD_LIGER_NORM_VALIDATE_HPP

#include <switchyard/norm.h>
#include <switchyard/norm_checks.hpp>

#include <cstdint>

namespace switchyard::liger {

void validate_norm_problem(const sy_norm_problem* problem);
using sy::norm_problem_of;
void validate_norm_forward(const sy_norm_forward_args* args);
void validate_norm_backward(const sy_norm_backward_args* args);

// Workspace of the backward (the forward needs none): the blocks' dgamma and dbeta sums.
struct NormWorkspaceLayout {
  int rows_per_block = 32;       // norm_rows_per_block: the backward's partial blocks
  int64_t blocks = 0;            // partial rows: norm_backward_blocks(rows, rows_per_block)
  int64_t dweight_partial = -1;  // float [blocks, hidden], RMSNorm and LayerNorm
  int64_t dbias_partial = -1;    // float [blocks, hidden], LayerNorm
  int64_t total = 0;
};
NormWorkspaceLayout norm_workspace_layout(const sy_norm_problem& problem);

using sy::norm_kind_name;  // "LayerNorm", "RMSNorm", "L2Norm"

}  // namespace switchyard::liger

#endif
