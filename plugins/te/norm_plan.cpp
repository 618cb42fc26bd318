#include "norm_plan.hpp"

#include "ce_plan.hpp"

#include <algorithm>

namespace switchyard::te {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Rows up to 1024 16-bit elements (128 chunks) take one chunk per thread; longer rows take
// chunks_per_thread chunks, so that a group of <= 512 threads holds the row.
NormLayout layout_for(int64_t chunks, int vec, int chunks_per_thread) {
  NormLayout l;
  l.vec = vec;
  l.chunks_per_thread = chunks <= 128 ? 1 : chunks_per_thread;
  l.threads = static_cast<int>(round_up(ceil_div(chunks, l.chunks_per_thread), 32));
  l.groups = std::max(1, std::min(16, kNormMaxBlock / l.threads));
  return l;
}

}  // namespace

NormPlan norm_plan(const sy_norm_problem& p) {
  NormPlan plan;
  const int vec = 16 / element_bytes(to_dtype(p.x_dtype));
  plan.chunks = ceil_div(p.hidden, vec);
  // Forward: 32 elements per thread (the row, plus nothing else, lives in registers).
  plan.forward = layout_for(plan.chunks, vec, 32 / vec);
  // Backward: 16 elements per thread (dy, x and the dgamma/dbeta accumulators of each element
  // live in registers), 32 when 16 would need more than 512 threads.
  plan.backward = layout_for(plan.chunks, vec, 16 / vec);
  if (plan.backward.threads > kNormMaxBlock) plan.backward = layout_for(plan.chunks, vec, 32 / vec);

  // The partition of rows for dgamma/dbeta: at most max(128, 2^20 / hidden) chunks (the
  // partials stay a few MiB), each a multiple of the backward's groups.
  const int64_t max_chunks = std::max<int64_t>(128, (int64_t{1} << 20) / p.hidden);
  const int64_t groups = plan.backward.groups;
  plan.rows_per_chunk = round_up(std::max(groups, ceil_div(p.rows, max_chunks)), groups);
  plan.chunk_count = ceil_div(p.rows, plan.rows_per_chunk);
  plan.parameters = p.kind == SY_NORM_LAYER ? 2 : p.kind == SY_NORM_RMS ? 1 : 0;
  plan.partial_bytes = round_up(plan.chunk_count * p.hidden * 4, 256);
  plan.workspace_bytes = plan.parameters * plan.partial_bytes;
  return plan;
}

}  // namespace switchyard::te
