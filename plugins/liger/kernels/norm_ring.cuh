// The ring kernels: the register kernels' row math (norm_device.cuh: the same columns per
// thread, the same sums in the same order, so the same bits) fed by a shared-memory ring of row
// stages filled by bulk copies (row_ring.cuh). A block is persistent: it walks rows
// block, block + grid, ... (forward) or the rows_per_block-row blocks of the backward's
// dgamma/dbeta partition, block, block + grid, ... (backward; each partial row is still the
// in-order sum of its rows), with up to `stages - 2` rows beyond the current one in flight,
// whatever the registers. Used for rows that are 16-byte aligned and a multiple of 16 bytes,
// 16-bit x (and, in the backward, every tensor of one 16-bit dtype), on the register paths'
// hidden sizes.
//
// Stage reuse: row i's stage is refilled with row i + stages once every thread has finished
// row i, which the first block reduction of row i + 1 proves (every thread passed its barriers
// after its last read of row i); so a row's data may be read in any pass, and thread 0 issues
// the refill right after that reduction.
#ifndef SWITCHYARD_LIGER_KERNELS_NORM_RING_CUH
#define SWITCHYARD_LIGER_KERNELS_NORM_RING_CUH

#include "norm_device.cuh"
#include "row_ring.cuh"

#include <cstdint>

namespace switchyard::liger {
namespace {

// A block's ring: the dynamic shared memory cut into plan.stages stages, one barrier each. The
// block's i-th row is in stage i % stages, in that barrier's (i / stages)-th phase; the loops
// below step (stage, parity) along with i (no 64-bit division in the loop).
struct RowRing {
  unsigned char* base;
  uint64_t* full;
  RingPlan plan;

  __device__ __forceinline__ const unsigned char* stage(int s) const {
    return base + s * plan.stage_bytes;
  }
  __device__ __forceinline__ void wait(int s, uint32_t parity) const {
    ring_wait(full + s, parity);
  }
  // One thread: copies the rows starting at rows[t] (NULL: absent) into stage s.
  __device__ __forceinline__ void fill(int s, const void* const (&rows)[3]) const {
    uint64_t* bar = full + s;
    unsigned char* dst = base + s * plan.stage_bytes;
    ring_expect(bar, plan.bytes);
#pragma unroll
    for (int t = 0; t < 3; ++t)
      if (plan.row_bytes[t] != 0) ring_copy(dst + plan.offset[t], rows[t], plan.row_bytes[t], bar);
  }
  __device__ __forceinline__ void advance(int& s, uint32_t& parity) const {
    if (++s == plan.stages) {
      s = 0;
      parity ^= 1u;
    }
  }
};

// Every thread: initialises the barriers and fills stages 0 .. stages - 1 with the block's rows
// 0 .. stages - 1 (of `count`). fill(s, i) issues the copies of the block's i-th row into s.
template <class Fill>
__device__ __forceinline__ void ring_start(const RowRing& ring, int count, const Fill& fill) {
  if (thread_x() == 0) {
    for (int s = 0; s < ring.plan.stages; ++s) ring_barrier_init(ring.full + s);
    ring_init_fence();
  }
  sync_threads();
  if (thread_x() == 0)
    for (int i = 0; i < ring.plan.stages && i < count; ++i) fill(i, i);
}

// The hook of row i's first reduction when the row is re-read from its stage later (the
// backward): row i - 1's stage (`previous`) takes row i - 1 + stages.
template <class Fill>
__device__ __forceinline__ void ring_refill_previous(const RowRing& ring, int i, int previous,
                                                     int count, const Fill& fill) {
  const int next = i - 1 + ring.plan.stages;
  if (thread_x() == 0 && i >= 1 && next < count) {
    ring_reuse_fence();  // the block's reads of the stage (before the barrier) come first
    fill(previous, next);
  }
}

// The hook of row i's first reduction when every thread has copied the row into registers
// before it (the forward): row i's own stage `current` takes row i + stages at once, so
// stages - 1 rows are in flight while the block finishes row i.
template <class Fill>
__device__ __forceinline__ void ring_refill_current(const RowRing& ring, int i, int current,
                                                    int count, const Fill& fill) {
  const int next = i + ring.plan.stages;
  if (thread_x() == 0 && next < count) {
    ring_reuse_fence();
    fill(current, next);
  }
}

// Two scratch areas alternated row by row, so that block_sum skips its trailing barrier
// (forward_row / backward_row's kAlternating); false: one area and the barrier (for A/B).
constexpr bool kRingAlternateScratch = true;

// ---- forward --------------------------------------------------------------------------------

// Rows block_x(), block_x() + grid, ...; x and residual through the ring, K chunks a thread as
// forward_register_kernel<K, 4>, with everything the row math branches on fixed at compile
// time (RingForm: the dtype of x, residual, y, gamma and beta; the kind; the casting mode;
// whole chunks; with kPlain the flags, gamma and beta present, not zero-centred, no residual,
// and all K chunks of every thread in the row).
// 64 registers at most (two 512-thread blocks' worth per SM), so that blocks of 128 threads
// (H = 4096) run 8 to an SM.
template <Dt D, NormKind kKind, bool kLlama, bool kPlain, int K>
__global__ void __launch_bounds__(kMaxRowThreads, kRingForwardMinBlocks)
    forward_ring_kernel(NormForwardArgs a, RingPlan plan) {
  using Form = RingForm<D, kKind, kLlama, kPlain>;
  // Two areas alternated row by row: no barrier after each reduction (forward_row's
  // kAlternating).
  SY_LIGER_SHARED float scratch[2][64];
  SY_LIGER_SHARED uint64_t full[kRingMaxStages];
  const RowRing ring{static_cast<unsigned char*>(dynamic_shared()), full, plan};
  const int64_t first = block_x();
  const int64_t step = grid_dim();
  const int count = static_cast<int>((a.rows - first + step - 1) / step);  // grid <= a.rows
  const unsigned char* x_base = static_cast<const unsigned char*>(a.x);
  const unsigned char* residual_base = static_cast<const unsigned char*>(a.residual);
  const int64_t x_step = step * a.x_stride * 2, residual_step = step * a.residual_stride * 2;
  // Thread 0's cursor: the rows of the next fill (no multiplication per row).
  const unsigned char* next_x = x_base + first * a.x_stride * 2;
  const unsigned char* next_residual =
      a.residual != nullptr ? residual_base + first * a.residual_stride * 2 : nullptr;
  auto fill = [&](int s, int) {
    const void* rows[3] = {next_x, next_residual, nullptr};
    ring.fill(s, rows);
    next_x += x_step;
    if (next_residual != nullptr) next_residual += residual_step;
  };
  ring_start(ring, count, fill);
  int s = 0;
  uint32_t parity = 0;
  int64_t row = first;
  for (int i = 0; i < count; ++i, row += step) {
    ring.wait(s, parity);
    const unsigned char* stage = ring.stage(s);
    forward_row<Form, K, true, 4, kRingAlternateScratch>(
        a, row, stage + plan.offset[0], stage + plan.offset[1],
        scratch[kRingAlternateScratch ? i & 1 : 0],
        [&] { ring_refill_current(ring, i, s, count, fill); });
    ring.advance(s, parity);
  }
}

// ---- backward -------------------------------------------------------------------------------

// Partial blocks (a.rows_per_block rows each) block_x(), block_x() + grid, ..., their rows in
// order; dy, x_or_y and d_residual_out through the ring, K chunks a thread as
// backward_register_kernel<D, K>, with RingForm's compile-time knowledge (one 16-bit dtype for
// every row tensor and gamma; the kind; the casting mode; whole chunks; not memory-efficient;
// with kPlain: gamma present, not zero-centred, no d_residual_out, all K chunks of every thread
// in the row). A partial row is stored when its block's last row is done. kMinBlocks: 2 (64
// registers) without dbeta, 1 with (K = 4, LayerNorm rows of one 16-bit dtype: 128-thread
// blocks at H = 4096, 4 to an SM).
template <Dt D, NormKind kKind, bool kLlama, bool kPlain, int K>
__global__ void __launch_bounds__(kNormBackwardMaxThreads, ring_backward_min_blocks(kKind))
    backward_ring_kernel(NormBackwardArgs a, RingPlan plan) {
  using Form = RingForm<D, kKind, kLlama, kPlain>;
  // Run-time rows per partial (a problem's rows_per_block): 32-bit index math, one division per
  // row on thread 0's fills and per partial elsewhere, none per element.
  const int rows_per = a.rows_per_block;  // 32 or 64: norm_rows_per_block
  SY_LIGER_SHARED float scratch[2][64];  // alternated row by row (backward_row's kAlternating)
  SY_LIGER_SHARED uint64_t full[kRingMaxStages];
  const RowRing ring{static_cast<unsigned char*>(dynamic_shared()), full, plan};
  const int64_t partials = (a.rows + rows_per - 1) / rows_per;
  const int64_t first = block_x();
  const int64_t step = grid_dim();  // at most `partials`
  int64_t rows_owned = (partials - first + step - 1) / step * rows_per;
  if ((partials - 1 - first) % step == 0) rows_owned -= partials * rows_per - a.rows;  // short last
  const int count = static_cast<int>(rows_owned);
  // The block's i-th row: partial first + (i / rows_per) * step, its row i % rows_per.
  auto row_of = [&](int i) {
    const int q = i / rows_per;
    return (first + static_cast<int64_t>(q) * step) * rows_per + (i - q * rows_per);
  };
  auto fill = [&](int s, int i) {
    const int64_t row = row_of(i);
    const void* rows[3] = {
        row_start(a.dy, D, row, a.dy_stride), row_start(a.x_or_y, D, row, a.x_or_y_stride),
        a.d_residual_out != nullptr ? row_start(a.d_residual_out, D, row, a.d_residual_out_stride)
                                    : nullptr};
    ring.fill(s, rows);
  };

  const BackwardColumns<K, Form::kFull> c(a.hidden);
  constexpr bool kWithMean = kKind == NormKind::Layer;  // never memory-efficient here
  WeightSums<Form, K> w;
  w.clear();
  // rstd/mean one row ahead in registers (32 rows' statistics share a cache line).
  float next_rstd = a.rstd[row_of(0)];
  float next_mean = kWithMean ? a.mean[row_of(0)] : 0.0f;
  ring_start(ring, count, fill);
  int s = 0, previous = plan.stages - 1;
  uint32_t parity = 0;
  int64_t row = row_of(0);
  int64_t partial = first;
  int left = rows_per;  // rows of the current partial not yet done (a countdown, no modulo a row)
  for (int i = 0; i < count; ++i) {
    const float rstd = next_rstd, mean = next_mean;
    const bool last_of_partial = --left == 0 || i + 1 == count;
    const int64_t next_row = last_of_partial ? row_of(i + 1) : row + 1;
    if (i + 1 < count) {
      next_rstd = a.rstd[next_row];
      if (kWithMean) next_mean = a.mean[next_row];
    }
    ring.wait(s, parity);
    const unsigned char* stage = ring.stage(s);
    // The row is read from the stage in both passes (it stays valid until row i + 1's
    // reduction), not kept in registers.
    auto chunks = [&](int k, RawChunk<4>& dy_raw, RawChunk<4>& xy_raw) {
      load_raw<true>(stage + plan.offset[0], D, c.column[k], kChunk, dy_raw);
      load_raw<true>(stage + plan.offset[1], D, c.column[k], kChunk, xy_raw);
    };
    backward_row<Form, true, 4, K, kRingAlternateScratch>(
        a, row, rstd, mean, chunks, stage + plan.offset[2], c, w,
        scratch[kRingAlternateScratch ? i & 1 : 0],
        [&] { ring_refill_previous(ring, i, previous, count, fill); });
    if (last_of_partial) {
      w.store(a, c, partial);
      w.clear();
      partial += step;
      left = rows_per;
    }
    previous = s;
    ring.advance(s, parity);
    row = next_row;
  }
}

}  // namespace
}  // namespace switchyard::liger

#endif
