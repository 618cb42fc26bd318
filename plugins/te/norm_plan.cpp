#include "norm_plan.hpp"

#include "ce_plan.hpp"
#include "row_claims.hpp"

#include <algorithm>
#include <cstdint>

namespace switchyard::te {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace

// `elements` elements per thread (fewer when the row is short: one chunk per thread up to 128
// chunks), doubled while the row would need more than 512 threads. Many elements per thread
// amortise a row's fixed costs (its reduction, loop and addressing) over more bytes.
NormLayout layout_for(int64_t chunks, int vec, int elements) {
  NormLayout l;
  l.vec = vec;
  l.chunks_per_thread = chunks <= 128 ? 1 : std::max(1, elements / vec);
  while (ceil_div(chunks, l.chunks_per_thread) > kNormMaxBlock) l.chunks_per_thread *= 2;
  l.threads = static_cast<int>(round_up(ceil_div(chunks, l.chunks_per_thread), 32));
  return l;
}

NormPlan norm_plan(const sy_norm_problem& p) {
  NormPlan plan;
  const int vec = 16 / element_bytes(to_dtype(p.x_dtype));
  plan.chunks = ceil_div(p.hidden, vec);
  // 32 elements per thread (bf16 hidden 4096: 128 threads; 8192: 256), forward and backward
  // (the dgamma and dbeta sums of each element live in registers as well). Measured on the H200
  // at LayerNorm 8192: forward 0.1697 ms with 128 threads x 64 elements, 0.1605 with 256 x 32
  // (since its Chan merge has known shares; before, 0.194 against 0.233 the other way).
  // The RMS/L2 forward of 16-bit rows takes 16: at 4096, four 256-thread blocks a multiprocessor
  // (56 registers) instead of seven of 128, each with half as long a row to finish when the
  // claims run out. Nineteenth session, same leases, bf16 [16384, H] forward + backward (ms):
  // 2048 0.1153 -> 0.1137, 3072 0.1442 -> 0.1430, 4096 0.1835 -> 0.1817, 5120 0.2292 -> 0.2258,
  // 8192 0.3458 -> 0.3428, 16384 level (the layout doubles back to 32 there); f16 4096 0.1833 ->
  // 0.1823, 8192 0.3469 -> 0.3426. Not LayerNorm, whose forward is issue-bound and slower with
  // more threads a row (4096: 0.0797 -> 0.0849 forward), nor fp32 (not measured). Since the
  // twentieth session those RMS/L2 rows of 2048 to 4096 elements take 32 again: their forward
  // reads them straight into registers, one row a block (norm_forward_reads_directly), which is
  // fastest at 128 x 32 (4096: forward 0.0727 -> 0.0698 ms against the claimed ring at 256 x 16;
  // the same reading at 256 x 16, 0.0868).
  const bool layer = p.kind == SY_NORM_LAYER;
  const bool forward16 = vec == 8 && !layer && !norm_forward_reads_directly(layer, vec, plan.chunks);
  plan.forward = layout_for(plan.chunks, vec, forward16 ? 16 : 32);
  // The backward: rows that cannot stream at 16 bits (fp32, mixed dtypes, memory-efficient) take
  // 16 in every kind (`narrow`): LayerNorm's general and fp32 kernels, which also keep a dbeta
  // sum per element, would spill at 32, and the fp32 RMS backward at 4096 measured 0.485 ->
  // 0.383 ms forward + backward at 256 x 16 against 128 x 32 (fourteenth session). Streamed
  // 16-bit rows take 16 where that makes a block of 512 threads (hidden in (7680, 8192]), whose
  // kernel holds dy·γ_eff across the reduction (with the dbeta sums too) and streams dy through
  // a ring of its own (norm_backward.cu, kBackwardSplitRing), and 32 elsewhere. Measured on the
  // H200, bf16 [16384, 8192], 512 threads x 16 against 256 x 32: RMS backward 0.2238 ->
  // 0.2109 ms, LayerNorm 0.2430 -> 0.2291. 16 elements at other widths, with blocks of 256 to
  // 448 threads, were slower: 4096 (256 x 16) 0.1225 against 0.1142, 5120 0.2185 against
  // 0.1865, 7168 0.3424 against 0.2608 (RMS).
  const bool same_dtypes = p.y_dtype.code == p.x_dtype.code && p.y_dtype.bits == p.x_dtype.bits &&
                           p.weight_dtype.code == p.x_dtype.code &&
                           p.weight_dtype.bits == p.x_dtype.bits;
  const bool streamable16 = vec == 8 && same_dtypes && (p.flags & SY_NORM_MEMORY_EFFICIENT) == 0;
  const bool narrow = !streamable16;
  const bool wide16 = streamable16 && plan.chunks <= 2 * kNormMaxBlock &&
                      layout_for(plan.chunks, vec, 16).threads == kNormMaxBlock;
  plan.backward = layout_for(plan.chunks, vec, narrow || wide16 ? 16 : 32);

  // Fewer chunks for wider backward blocks, which fewer of share a multiprocessor: as many rows
  // on each block's critical path, and fewer partials to write and sum (LayerNorm 8192, dgamma
  // and dbeta: 8 MiB each way at 512 threads, 32 at 128). Never more chunks than an H200 holds
  // blocks (kNormPlanMultiprocessors x the blocks its 64 Ki registers fit at the backward's 128
  // a thread): a block that takes a second chunk makes every other wait for it. 512 x 128 /
  // threads alone gave 409 chunks to 396 blocks of 160 threads at H = 5120, 341 to 264 at 6144,
  // 292 to 264 at 7168; capped, the RMS backward went 0.1865 -> 0.1446 ms, 0.2038 -> 0.1710,
  // 0.2610 -> 0.1933 (LayerNorm 0.2064 -> 0.1625, 0.2323 -> 0.1752, 0.2922 -> 0.2049).
  const int64_t max_chunks =
      std::min({kNormMaxRowChunks, kNormMaxRowChunks * 128 / plan.backward.threads,
                kNormPlanMultiprocessors * norm_plan_resident_blocks(plan.backward.threads)});
  plan.rows_per_chunk = std::max<int64_t>(1, ceil_div(p.rows, max_chunks));
  plan.chunk_count = ceil_div(p.rows, plan.rows_per_chunk);
  plan.parameters = p.kind == SY_NORM_LAYER ? 2 : p.kind == SY_NORM_RMS ? 1 : 0;
  plan.partial_bytes = round_up(plan.chunk_count * p.hidden * 4, 256);
  plan.row_claims_offset = plan.parameters * plan.partial_bytes;
  const bool claimable = p.rows > 0 && p.rows <= kNormMaxClaimedRows;
  plan.row_claims_bytes =
      norm_forward_claims_rows(layer) && claimable ? kRowClaimsBytes : 0;
  plan.workspace_bytes = plan.row_claims_offset + plan.row_claims_bytes;
  return plan;
}

}  // namespace switchyard::te
