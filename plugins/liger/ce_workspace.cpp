#include "ce_workspace.hpp"

#include <switchyard/plugin_helpers.hpp>

namespace switchyard::liger {

CeWorkspaceLayout ce_workspace_layout(const sy_ce_problem& p) {
  constexpr int64_t kAlignment = 256;
  CeWorkspaceLayout layout;
  int64_t at = 0;
  auto place = [&](int64_t bytes) {
    const int64_t offset = at;
    at = sy::align_up(at + bytes, kAlignment);
    return offset;
  };
  if ((p.flags & SY_CE_CHECK_LABELS) != 0) layout.check_slot = place(8);
  if (p.tp_size > 1 && p.rows > 0) {
    const int64_t row_floats = sy::checked_multiply(p.rows, 4, "rows x 4 bytes");
    layout.local_max = place(row_floats);
    layout.global_max = place(row_floats);
    layout.local_sum_exp = place(row_floats);
    layout.packed = place(sy::checked_multiply(row_floats, 3, "the packed row statistics"));
    if ((p.flags & SY_CE_ARGMAX) != 0) layout.candidates = place(2 * row_floats);
  }
  layout.total = at;
  return layout;
}

int32_t ce_collectives(const sy_ce_problem& p) {
  if (p.tp_size <= 1 || p.rows == 0) return 0;
  return 2 + ((p.flags & SY_CE_ARGMAX) != 0 ? 1 : 0);
}

}  // namespace switchyard::liger
