#include "ce_plan.hpp"

#include "row_claims.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <algorithm>

namespace switchyard::te {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

int threads_for(int64_t work_items, int max_threads) {
  return static_cast<int>(std::clamp<int64_t>(round_up(std::max<int64_t>(work_items, 1), 32), 32,
                                              max_threads));
}

CeScalars scalars_of(const sy_ce_problem& p) {
  double s = 0.0;
  if (p.label_smoothing != 0.0f) {
    const double alpha = p.label_smoothing;
    const double v = static_cast<double>(p.vocab_size);
    if (p.smoothing == SY_SMOOTHING_PYTORCH)
      s = alpha;
    else if (p.vocab_size > 1)
      s = alpha * v / (v - 1.0);
  }
  CeScalars c{};
  c.smoothing = static_cast<float>(s);
  c.one_minus_smoothing = static_cast<float>(1.0 - s);
  c.uniform = static_cast<float>(s / static_cast<double>(p.vocab_size));
  c.vocab = static_cast<float>(p.vocab_size);
  return c;
}

}  // namespace

DType to_dtype(DLDataType type) {
  if (sy::same(type, sy::kBF16)) return DType::BF16;
  if (sy::same(type, sy::kF16)) return DType::F16;
  return DType::F32;
}

CePlan ce_plan(const sy_ce_problem& p) {
  CePlan plan;
  plan.logits = to_dtype(p.logits_dtype);
  plan.grad = to_dtype(p.grad_dtype);
  plan.vec = 16 / element_bytes(plan.logits);
  plan.chunks = ceil_div(p.vocab_local, plan.vec);
  plan.stats_threads = threads_for(ceil_div(plan.chunks, kCeUnroll), kCeMaxThreads);
  // The fused kernel's statistics use the forward's block size (same chunk -> thread map, same
  // merge tree), so grad in forward gives the plain forward's lse and loss bit for bit.
  plan.fused_threads = std::min(plan.stats_threads, kCeFusedMaxThreads);
  plan.fused_slots = static_cast<int>(
      std::min<int64_t>(kCeFusedSlots, ceil_div(plan.chunks, plan.fused_threads)));
  const int64_t cluster = std::max<int64_t>(1, ceil_div(plan.chunks, kCeSliceMaxChunks));
  plan.slices = cluster <= kCeSliceMaxCluster;
  if (plan.slices) {
    plan.cluster = static_cast<int>(cluster);
    plan.slice_chunks = static_cast<int>(ceil_div(plan.chunks, cluster));
    plan.slice_threads = threads_for(ceil_div(plan.slice_chunks, kCeSliceChunksPerThread),
                                     kCeSliceMaxThreads);
    plan.grad_slices = static_cast<int>(ceil_div(plan.chunks, kCeGradSliceChunks));
    plan.grad_slice_chunks = static_cast<int>(ceil_div(plan.chunks, plan.grad_slices));
    plan.grad_threads = threads_for(ceil_div(plan.grad_slice_chunks, kCeSliceChunksPerThread),
                                    kCeSliceMaxThreads);
  }
  if (p.tp_size > 1)
    plan.workspace_bytes =
        round_up(static_cast<int64_t>(p.tp_size) * p.rows * static_cast<int64_t>(sizeof(CeRowStats)),
                 256);
  else if (plan.slices && p.rows > 0 && (p.flags & SY_CE_GRAD_IN_FORWARD) != 0)
    plan.workspace_bytes = kRowClaimsBytes;
  plan.scalars = scalars_of(p);
  return plan;
}

int32_t ce_forward_collectives(const sy_ce_problem& p) { return p.tp_size > 1 ? 1 : 0; }

}  // namespace switchyard::te
