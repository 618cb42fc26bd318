// The cross-entropy workspace, carved in a fixed order (device memory, 256-byte aligned
// segments): the label-check slot (SY_CE_CHECK_LABELS) and, for tensor parallelism, the
// per-row statistics that travel through the collectives. Offsets are -1 when absent.
#ifndef SWITCHYARD_LIGER_CE_WORKSPACE_HPP
#define SWITCHYARD_LIGER_CE_WORKSPACE_HPP

#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::liger {

struct CeWorkspaceLayout {
  int64_t check_slot = -1;     // unsigned long long
  int64_t local_max = -1;      // float [N]
  int64_t global_max = -1;     // float [N]
  int64_t local_sum_exp = -1;  // float [N]
  int64_t packed = -1;         // float [3N]
  int64_t candidates = -1;     // int64 [N], with SY_CE_ARGMAX
  int64_t total = 0;
};

// Throws INVALID_ARGUMENT when the sizes overflow.
CeWorkspaceLayout ce_workspace_layout(const sy_ce_problem& problem);

// Collectives one forward issues: MAX of the row maxima, [MIN of the argmax candidates],
// SUM of (sum of exponentials | target logit | sum of logits); none without tensor
// parallelism or rows.
int32_t ce_collectives(const sy_ce_problem& problem);

}  // namespace switchyard::liger

#endif
