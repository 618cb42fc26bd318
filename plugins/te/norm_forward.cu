// te's normalization forward (README.md, "Normalization"): norm_forward_kernel and its
// launcher. Persistent blocks; a block holds one row at a time in registers (thread t: chunks
// t, t + threads, ...), merges (count, mean, M2) with Chan's formula (LayerNorm) or the sum of
// squares (RMS/L2), and writes y, mean, rstd (and h = x + residual).
//
// STREAMED kernels take their rows from a ring of shared-memory stages that bulk copies (sm_90
// cp.async.bulk) fill ahead of the rows' use (here a row ahead: kForwardStages), so the loads in
// flight do not depend on the registers a thread holds; the other instantiations read global
// memory directly: the general one (rows that are not 16-byte aligned, mixed dtypes, or whose
// stages do not fit) and the DIRECT one (16-bit RMS/L2 rows of 2048 to 4096 elements at
// sm_margin 0, one row a block: kForwardDirect). All do the same arithmetic in the same order, so
// a row's bits never depend on the path, and every order of summation is fixed by the plan
// (hidden, x dtype, rows), never by the grid: sm_margin changes the speed only.
#include "norm_kernels.hpp"

#include "cuda_support.hpp"
#include "norm_device.cuh"
#include "norm_launch.cuh"
#include "row_claims.hpp"
#include "te_device.cuh"

#include <switchyard/norm.h>
#include <switchyard/plugin_helpers.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace switchyard::te {
namespace {

// RN(1/k) for k = 0 ... kMaxGroupWarps (k = 0 unused): the share b.n / (a.n + b.n) of the
// k-th of k equal parts, which IEEE division gives exactly so when the counts are exact.
__constant__ float kEqualShare[kMaxGroupWarps + 1] = {
    0.0f,         1.0f,         1.0f / 2.0f,  1.0f / 3.0f,  1.0f / 4.0f,  1.0f / 5.0f,
    1.0f / 6.0f,  1.0f / 7.0f,  1.0f / 8.0f,  1.0f / 9.0f,  1.0f / 10.0f, 1.0f / 11.0f,
    1.0f / 12.0f, 1.0f / 13.0f, 1.0f / 14.0f, 1.0f / 15.0f, 1.0f / 16.0f};

// group_reduce(make_float4(count, mean, M2, 0), ..., ChanMerge{}) when every thread of the
// group holds `count` elements (a streamed row that fills the block exactly), returning
// (mean, M2). Every merge of the lane tree then joins equal counts (share 0.5) and warp w
// joins w equal warps (share 1/(w + 1)), so the counts need no shuffle and the shares no
// division: two shuffles a level instead of four, no branch. (The general merge and rstd were
// about 30 % of the LayerNorm forward's instructions per row at H = 4096, counted in the SASS
// against Nsight Compute's 25 per element.) The same merges in the same order: the same bits.
__device__ __forceinline__ float2 equal_count_chan_reduce(float mean, float m2, float count,
                                                          const Group& g,
                                                          GroupScratch<float4>& scratch,
                                                          int& parity) {
  Chan v{count, mean, m2};
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float2 other = shfl_down(make_float2(v.mean, v.m2), offset);
    v = chan_merge_weighted(v, Chan{v.n, other.x, other.y}, 0.5f);
  }
  const float2 lane0 = shfl_first(make_float2(v.mean, v.m2));
  const int warps = g.threads / 32;
  if (warps == 1) {
    __syncwarp();
    return lane0;
  }
  if ((g.thread & 31) == 0) scratch[parity][g.thread / 32] = make_float4(lane0.x, lane0.y, 0.0f, 0.0f);
  group_barrier(g);
  const float per_warp = v.n;
  Chan r;
  if ((warps & (warps - 1)) == 0) {
    // A power of two of warps: lane w of every warp takes warp w's state (lanes past the warps
    // load warp 0's, which never reaches lane 0) and the warps fold the lanes pairwise, every
    // merge joining equal counts (share 0.5), the same tree in every warp, as group_reduce's
    // PairwiseSumMerge: a load and two shuffles a level instead of a load and a merge a warp.
    const int lane = g.thread & 31;
    const float4 s = scratch[parity][lane < warps ? lane : 0];
    r = Chan{per_warp, s.x, s.y};
#pragma unroll
    for (int offset = kMaxGroupWarps / 2; offset > 0; offset >>= 1) {
      if (offset >= warps) continue;
      const float2 other = shfl_down(make_float2(r.mean, r.m2), offset);
      r = chan_merge_weighted(r, Chan{r.n, other.x, other.y}, 0.5f);
    }
    const float2 first = shfl_first(make_float2(r.mean, r.m2));
    r.mean = first.x;
    r.m2 = first.y;
  } else {
    r = Chan{per_warp, scratch[parity][0].x, scratch[parity][0].y};
    for (int w = 1; w < warps; ++w) {
      const float4 s = scratch[parity][w];
      r = chan_merge_weighted(r, Chan{per_warp, s.x, s.y}, kEqualShare[w + 1]);
    }
  }
  parity ^= 1;
  return make_float2(r.mean, r.m2);
}

// Streamed with up to 32 elements a thread: a block's thread sees the same columns in every
// row, so it keeps its gamma as raw bits from the start (weight has x's dtype) instead of
// loading and converting it per row (Nsight Compute: 25 instructions per element, 16 of them
// forming y; measured RMS 4096 forward 0.0833 -> 0.0810 ms). At 64 elements the extra
// registers spill and LayerNorm 8192 got slower (0.192 -> 0.212 ms), so not there.
template <int CPT, int D>
constexpr bool kForwardGammaInRegisters = D != kMixed && CPT < 8;

// Streamed 16-bit LayerNorm rows read beta from the block's copy in shared memory
// (RingLayout::parameter_bytes; the host streams such rows only when bias has x's dtype or is
// absent). Read from global memory every row, its loads held a fifth of the stall samples of
// the LayerNorm 8192 forward (Nsight Compute). Same lease, forward: 8192 0.1619 -> 0.1557 ms
// (with a ring stage fewer for the copy: three, not four), 4096 0.0850 -> 0.0828 (two, not
// three), 16384 0.3946 -> 0.3133; measured before the rows became floats (kForwardFloatRow),
// whose fewer blocks a multiprocessor have more stages each.
template <int VEC, int D, bool LAYER>
constexpr bool kForwardBetaShared = D != kMixed && VEC == 8 && LAYER;

// Streamed 16-bit LayerNorm rows are converted to floats once, after the row is read, instead of
// from the raw bits in each of the three passes over them (the sum, M2, y): two instructions an
// element fewer in a forward that Nsight Compute finds issue-bound (LayerNorm 8192: issue slots
// 76 % busy). The floats took 94 registers (111 since gamma is floats too, below),
// which left two 256-thread blocks a multiprocessor at H = 8192 (three before) and five of 128
// at 4096 (seven): same lease, forward 0.1561 -> 0.1503 ms at 8192, 0.0829 -> 0.0822 at 4096,
// 0.3116 -> 0.3063 at 16384. RMS rows, whose forward is not issue-bound, measured the same with
// floats (80 registers) and keep raw bits.
// Up to 32 elements a thread, which every 16-bit row up to the widest (16384) has.
// Those rows' gamma_eff is converted to floats too, once per block, not per chunk of every row:
// one instruction an element fewer again (111 registers, capped at 112: four 128-thread blocks
// a multiprocessor at H = 4096 instead of five, two of 256 at 8192 as before). Same lease,
// forward: LayerNorm 4096 0.0818 -> 0.0811 ms, 8192 0.1500 -> 0.1492 (ninth session), again
// 0.0821 -> 0.0812 and 0.1511 -> 0.1500 in the tenth; the same bits.
template <int VEC, int CPT, int D, bool LAYER>
constexpr bool kForwardFloatRow = D != kMixed && VEC == 8 && CPT <= 4 && LAYER;

// Streamed RMS/L2 rows are claimed by the blocks as they free up (norm_device.cuh, ClaimCursor),
// not dealt by stride: the multiprocessors of a memory-bound forward do not run at one pace
// (timelines: SMs holding the same rows of RMS 4096 ended between 49 and 72 us). Same lease,
// forward: RMS 4096 0.0749 -> 0.0733 ms, 8192 0.1433 -> 0.1378. LayerNorm's forward keeps its
// stride, although its tail is the largest of the four shapes (eighteenth session's timelines:
// 6.9 us at 4096, 10.7 at 8192): claiming costs it more than that, with the cursor in registers
// (a spill; 0.0814 -> 0.0864 ms at 4096, 0.1491 -> 0.1602 at 8192) and with this cursor in
// shared memory and no spill alike (eighteenth session, same lease: 0.0790 -> 0.0847 and
// 0.1452 -> 0.1607). Its timelines then show the rows balanced but every block 13-14 % slower,
// mostly from thread 0 waiting for each claim's atomic (its SASS moves the result at once into
// the claim's register); claimed with a 32-bit atomic that lands there, 0.0800 -> 0.0805 and
// 0.1485 -> 0.1504: still no gain (bench/results/2026-12-02-h200-session18, leases 6-8). With
// that claim and the loop left on a warp vote (below), forward + backward 0.1948 -> 0.1934 ms
// at 4096 but slower at every other width (2048 to 16384: +0.9 to +9.6 us) and in f16 (4096
// +6.5 us); this claimed kernel run by stride is itself 1.1 and 3.9 us slower than the stride
// one, so the claims' balance is spent in its code. With each stage's row read a row ahead,
// after the reduction, 4096 0.1947 -> 0.1929 and 8192 level, the other widths still 2.8 to 5.8
// us slower (nineteenth session, same leases).
template <bool LAYER>
constexpr bool kForwardClaimsRows = norm_forward_claims_rows(LAYER);

// 16-bit RMS/L2 rows of 2048 to 4096 elements (norm_forward_reads_directly; the plan gives them
// 128 threads x 32 elements at 4096) are read straight from global memory into registers, one row
// a block, with no ring, no claims and no persistent grid: the hardware hands a free slot the next
// row, so the multiprocessors balance themselves, and a block's start costs less than the ring's
// claim and refill between rows (Liger-Kernel's rows, one Triton program each, measured 0.0687 ms
// for the RMS 4096 forward against te's 0.0723 in the nineteenth session's final run).
// Twentieth session, same lease, forward + backward (forward), ms, against the claimed ring at
// 256 x 16: bf16 2048 0.1148 -> 0.1093 (0.0432 -> 0.0379), 3072 0.1431 -> 0.1383, 4096 0.1827 ->
// 0.1795 (0.0727 -> 0.0698), f16 4096 0.1825 -> 0.1801; level at 5120 (0.2261 against 0.2268),
// slower at 8192 (0.3445 -> 0.3521) and 16384 (0.673 -> 0.794), which keep the ring. At 256 x 16
// the same reading was slower at every width (4096 forward 0.0868), and so was the persistent grid
// reading by stride (0.0813), which sm_margin would need: with a margin these rows take the ring
// at the same layout, so their bits do not change. LayerNorm read this way was slower (4096 forward
// 0.0798 -> 0.1020 with its rows as floats at 112 registers, 0.0812 as raw bits at 72).
// Results: bench/results/2026-12-02-h200-session20.
template <int VEC, int CPT, bool LAYER>
constexpr bool kForwardDirect = !LAYER && VEC == 8 && CPT == 4;

// The forward's rows. LAYER: LayerNorm (Chan's merge, y from h − mean), else RMS/L2 (the sum
// of squares; y from h, which is (h − 0) exactly). G: the GammaForm. Rows stream through the
// ring exactly when the dtypes are known (D != kMixed): the host picks that instantiation only
// for aligned rows whose stages fit. DIRECT: typed rows read straight from global memory, one row
// a block (kForwardDirect); the arithmetic is the STREAMED kernel's.
template <int VEC, int CPT, int D, bool LAYER, int G, bool DIRECT>
__device__ __forceinline__ void forward_rows(const NormForwardArgs& a, const RingLayout& layout) {
  constexpr bool STREAMED = D != kMixed;  // the dtypes known at compile time, whole chunks
  constexpr bool RING = STREAMED && !DIRECT;
  extern __shared__ __align__(128) unsigned char ring_memory[];
  __shared__ uint64_t full[kMaxStages];
  __shared__ GroupScratch<float4> chan_scratch;  // LayerNorm: (count, mean, M2)
  __shared__ GroupScratch<float> sum_scratch;    // RMS/L2: the sum of squares
  const Group g{0, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  const bool vector = STREAMED || a.vector_ok != 0;  // streamed: every row is aligned
  const bool residual = a.residual != nullptr;
  const bool bf16 = D == kMixed ? a.x_dtype == DType::BF16 : D == static_cast<int>(DType::BF16);
  const int64_t hidden = a.hidden;
  const float h_count = static_cast<float>(hidden);
  // Every thread holds CPT * VEC elements of every row: the streamed and the general kernel
  // then both merge with equal_count_chan_reduce, so a row's bits do not depend on its path.
  const bool equal_counts = hidden == static_cast<int64_t>(g.threads) * CPT * VEC;
  const int64_t step = gridDim.x;
  const RingSources src{{static_cast<const char*>(a.x), static_cast<const char*>(a.residual), nullptr},
                        {a.x_row_bytes, a.residual_row_bytes, 0}};
  // RMS/L2 rows are claimed (kForwardClaimsRows): each stage records its row.
  constexpr bool kClaimed = RING && kForwardClaimsRows<LAYER>;
  __shared__ int64_t stage_rows[kMaxStages];
  const Ring ring{layout, ring_memory, full, kClaimed ? stage_rows : nullptr};
  __shared__ ClaimCursor::State cursor_state;
  auto next = [&] {  // thread 0's: the next row to fill
    if constexpr (kClaimed) return ClaimCursor(a, layout.stages, cursor_state);
    else return StrideCursor(a.rows);
  }();
  StagePosition filled;
  if constexpr (RING) ring.start(next, filled, src);
  constexpr bool kGammaInRegisters = kForwardGammaInRegisters<CPT, D> && G != kGammaOne;
  constexpr bool kGammaFloats = kGammaInRegisters && kForwardFloatRow<VEC, CPT, D, LAYER>;
  RawChunk gamma_raw[kGammaInRegisters && !kGammaFloats ? CPT : 1];
  float gamma_float[kGammaFloats ? CPT : 1][VEC];
  if constexpr (kGammaInRegisters) {
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int64_t col0 = first_column(g.thread, c) * VEC;
      RawChunk raw;
      load_raw<VEC>(raw, a.weight, col0, chunk_valid<VEC, true>(col0, hidden), true);
      if constexpr (kGammaFloats) gamma_of<G, VEC>(raw, bf16, gamma_float[c]);
      else gamma_raw[c] = raw;
    }
  }
  // Beta, as raw bits, after the ring's stages: each thread stores its own chunks once and
  // reads them back every row (no barrier).
  constexpr bool kBetaShared = kForwardBetaShared<VEC, D, LAYER> && RING;
  auto beta_shared_at = [&](int chunk) -> RawChunk& {
    return reinterpret_cast<RawChunk*>(ring_memory + layout.stages * layout.stage_bytes)[chunk];
  };
  const bool with_beta = LAYER && a.bias != nullptr;
  if (kBetaShared && with_beta) {
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int64_t col0 = first_column(g.thread, c) * VEC;
      if (col0 < hidden) load_raw<VEC>(beta_shared_at(g.thread + c * g.threads), a.bias, col0, VEC, true);
    }
  }
  int parity = 0;
  StagePosition at;  // this row's stage
  // Claimed rows are the ring's (each stage records its row; -1 ends), the others by stride.
  for (int64_t row = blockIdx.x; kClaimed || row < a.rows; row += step, at.advance(layout.stages)) {
    // gamma does not change from row to row: hoisted out of this loop, its conversion would
    // hold 32 floats (95 registers, five blocks a multiprocessor); converted where used, 80 and
    // six (measured LayerNorm 4096 forward 0.0950 -> 0.0899 ms, RMS unchanged, when LayerNorm
    // rows were raw bits too; with its rows as floats, kForwardFloatRow hoists it on purpose).
    if constexpr (kGammaInRegisters && !kGammaFloats)
#pragma unroll
      for (int c = 0; c < CPT; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) hide_from_hoisting(gamma_raw[c].u[i]);
    const char* x_row = static_cast<const char*>(a.x) + row * a.x_row_bytes;
    const char* res_row =
        residual ? static_cast<const char*>(a.residual) + row * a.residual_row_bytes : nullptr;
    if constexpr (RING) {
      const char* stage = ring.wait(at);
      if constexpr (kClaimed) {  // the stage's row (x_row and res_row: the stage's, below)
        row = ring.row_at(at);
        // Left on a vote, which every lane of the warp takes alike (the row is the block's):
        // after a plain branch on this shared-memory value the compiler built every later warp
        // shuffle for a diverged warp (WARPSYNC ... ENDCOLLECTIVE sequences, 15 in the RMS
        // forward, 99 in a claimed LayerNorm one).
        if (__any_sync(kFullMask, row < 0)) break;
      }
      x_row = stage + layout.offset[0];
      if (residual) res_row = stage + layout.offset[1];
    }
    RawChunk h[CPT];  // h = x, or x + residual rounded to x's dtype
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int64_t col0 = first_column(g.thread, c) * VEC;
      const int valid = chunk_valid<VEC, STREAMED>(col0, hidden);
      if (STREAMED && valid == 0) {
        h[c] = RawChunk{};
        continue;
      }
      load_raw<VEC>(h[c], x_row, col0, valid, vector);
      if (residual && valid > 0) {
        float r[VEC], hv[VEC];
        load_as<D, VEC>(a.x_dtype, res_row, col0, valid, vector, 0.0f, r);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          if (STREAMED || e < valid) raw_set<VEC>(h[c], e, bf16, raw_get<VEC>(h[c], e, bf16) + r[e]);
          hv[e] = raw_get<VEC>(h[c], e, bf16);
        }
        // residual_out may be x or residual: this row was read (into registers or the ring)
        // before this store.
        store_as<D, VEC>(a.x_dtype, static_cast<char*>(a.residual_out) + row * a.residual_out_row_bytes,
                         col0, valid, vector, hv);
      }
    }

    // The row as floats (kForwardFloatRow), else converted from h where used.
    constexpr bool kFloatRow = kForwardFloatRow<VEC, CPT, D, LAYER>;
    float h_float[kFloatRow ? CPT : 1][VEC];
    if constexpr (kFloatRow)
#pragma unroll
      for (int c = 0; c < CPT; ++c)
#pragma unroll
        for (int e = 0; e < VEC; ++e) h_float[c][e] = raw_get<VEC>(h[c], e, bf16);
    auto h_at = [&](int c, int e) -> float {
      if constexpr (kFloatRow) return h_float[c][e];
      else return raw_get<VEC>(h[c], e, bf16);
    };
    float mean = 0.0f;
    float rstd;
    if constexpr (LAYER) {
      // This thread's (count, mean, M2), then Chan's merge over the block.
      float count = 0.0f, sum = 0.0f;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int valid = chunk_valid<VEC, STREAMED>(first_column(g.thread, c) * VEC, hidden);
        count += static_cast<float>(valid);
#pragma unroll
        for (int e = 0; e < VEC; ++e) sum += h_at(c, e);  // padding is 0
      }
      // Equal counts: the same division by a compile-time count (a power of two: a multiply).
      constexpr float kCount = CPT * VEC;
      const float local_mean =
          equal_counts ? sum / kCount : count > 0.0f ? sum / count : 0.0f;
      float m2 = 0.0f;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int valid = chunk_valid<VEC, STREAMED>(first_column(g.thread, c) * VEC, hidden);
        // A chunk past the row holds zeros, which are not the row's: (0 − mean)² must not
        // count (rows that do not split evenly over the threads, e.g. 5000 = 160 threads x 4
        // chunks less 15). A streamed chunk is whole or empty, so no per-element test.
        if (STREAMED && valid == 0) continue;
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const float d = h_at(c, e) - local_mean;
          // One explicit FMA in both kernels: a select between d·d and 0 would keep the general
          // kernel's product and sum apart, and its M2 would round differently.
          if (STREAMED || e < valid) m2 = __fmaf_rn(d, d, m2);
        }
      }
      float2 merged;  // (mean, M2) of the row
      if (equal_counts) {
        merged = equal_count_chan_reduce(local_mean, m2, kCount, g, chan_scratch, parity);
      } else {
        const float4 chan =
            group_reduce(make_float4(count, local_mean, m2, 0.0f), g, chan_scratch, parity, ChanMerge{});
        merged = make_float2(chan.y, chan.z);
      }
      mean = merged.x;
      rstd = norm_rstd(merged.y / h_count, a.eps);
    } else {
      float squares = 0.0f;
#pragma unroll
      for (int c = 0; c < CPT; ++c)
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const float v = h_at(c, e);
          squares += v * v;
        }
      const float merged = group_reduce(squares, g, sum_scratch, parity, SumMerge{});
      rstd = norm_rstd(merged / h_count, a.eps);
    }
    // The reduction was a barrier: every thread has its row in registers.
    if constexpr (RING)
      if (g.thread == 0) ring.refill(next, filled, src);

    char* y_row = static_cast<char*>(a.y) + row * a.y_row_bytes;
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int64_t col0 = first_column(g.thread, c) * VEC;
      const int valid = chunk_valid<VEC, STREAMED>(col0, hidden);
      if (valid == 0) continue;
      // load_parameters' values: gamma_eff = gamma (+ 1 in fp32 when zero-centred), 1
      // without weight; beta, 0 without bias (RMS/L2 have none: the ABI refuses a bias there).
      float gamma[VEC], beta[VEC], y[VEC];
      if constexpr (G == kGammaRuntime) {
        load_parameters<D, VEC>(a.weight, a.bias, a.weight_dtype, a.zero_centered != 0, col0, valid,
                                vector, gamma, beta);
      } else {
        if constexpr (kGammaFloats) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) gamma[e] = gamma_float[c][e];
        } else if constexpr (kGammaInRegisters) {
          gamma_of<G, VEC>(gamma_raw[c], bf16, gamma);
        } else {
          gamma_of<G, D, VEC>(a.weight, a.weight_dtype, col0, valid, vector, gamma);
        }
        if (kBetaShared && with_beta) {
          // A 32-bit index: fewer registers than first_column's 64-bit one.
#pragma unroll
          for (int e = 0; e < VEC; ++e) beta[e] = raw_get<VEC>(beta_shared_at(g.thread + c * g.threads), e, bf16);
        } else if (!kBetaShared && with_beta) {
          load_as<D, VEC>(a.weight_dtype, a.bias, col0, valid, vector, 0.0f, beta);
        } else {
#pragma unroll
          for (int e = 0; e < VEC; ++e) beta[e] = 0.0f;
        }
      }
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        // RMS/L2: y = h·rstd·γ, with no beta to add.
        const float v = h_at(c, e);
        y[e] = LAYER ? (v - mean) * rstd * gamma[e] + beta[e] : v * rstd * gamma[e];
      }
      store_as<D, VEC>(a.y_dtype, y_row, col0, valid, vector, y);
    }
    if (g.thread == 0) {
      a.rstd[row] = rstd;
      if (LAYER && a.mean != nullptr) a.mean[row] = mean;
    }
  }
}

// Streamed: at most 72 registers a thread at up to 32 elements (seven of the plan's 128-thread
// blocks share a multiprocessor at H = 4096: measured LayerNorm 4096 forward 0.0896 -> 0.0855
// ms against 80 registers and six blocks, when its rows were raw bits; RMS unchanged; the
// 16-bit RMS/L2 rows' 16 elements take 56, four 256-thread blocks at 4096), 96 at
// 64 (which spill at 72; five blocks at LayerNorm 8192, not four as at the 107 registers it
// takes without a cap: 0.194 -> 0.236 ms), and 112 for rows and gamma held as floats
// (kForwardFloatRow). Otherwise 128, what one block of kNormMaxBlock threads
// can have.
template <int VEC, int CPT, int D, bool LAYER>
constexpr int kForwardMaxRegisters = D == kMixed                              ? 128
                                     : kForwardFloatRow<VEC, CPT, D, LAYER>   ? 112
                                     : CPT > 4                                ? 96
                                                                              : 72;

template <int VEC, int CPT, int D, bool LAYER, bool DIRECT = false>
__global__ void __maxnreg__((kForwardMaxRegisters<VEC, CPT, D, LAYER>))
    norm_forward_kernel(NormForwardArgs a, RingLayout layout) {
  with_gamma_form<D != kMixed>(a.weight, a.zero_centered, [&](auto form) {
    forward_rows<VEC, CPT, D, LAYER, decltype(form)::value, DIRECT>(a, layout);
  });
}

// ---- launch ------------------------------------------------------------------------------------

template <int VEC, int CPT, int D, bool LAYER>
void forward_with(const NormForwardArgs& a, const NormLayout& l, const RingLayout& ring, int device,
                  int sm_margin, void* stream) {
  const auto kernel = norm_forward_kernel<VEC, CPT, D, LAYER>;
  const size_t shared = ring_bytes(ring);
  if (D != kMixed && ring.stages == 0)
    sy::fail(SY_ERR_INTERNAL, "te: norm_forward_kernel streamed without a ring");
  static std::atomic<uint64_t> raised{0};  // this instantiation's
  if (shared != 0) allow_all_shared(reinterpret_cast<const void*>(kernel), device, "norm_forward_kernel", raised);
  const int grid = grid_for(reinterpret_cast<const void*>(kernel), l.threads, shared, a.rows,
                            device, sm_margin);
  // Blocks claim rows only past the grid's first ring-full (ClaimCursor): where there are none,
  // no counter and no zeroing kernel (a decode step's few rows).
  const bool claims = D != kMixed && kForwardClaimsRows<LAYER> && a.row_claims != nullptr &&
                      a.rows > int64_t{ring.stages} * grid;
  if (!claims) {
    NormForwardArgs plain = a;
    plain.row_claims = nullptr;
    kernel<<<grid, l.threads, shared, stream_of(stream)>>>(plain, ring);
    return;
  }
  launch_zero_row_claims(a.row_claims, stream);
  cudaLaunchAttribute attributes[1] = {programmatic_serialization()};
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(grid));
  config.blockDim = dim3(static_cast<unsigned>(l.threads));
  config.dynamicSmemBytes = shared;
  config.stream = stream_of(stream);
  config.attrs = attributes;
  config.numAttrs = 1;
  check_cuda(cudaLaunchKernelEx(&config, kernel, a, ring), "cudaLaunchKernelEx(norm_forward_kernel)");
}

// The forward's ring holds two rows a block: the one being normalised and the next, not as many
// as fit. More rows in flight made the forward slower, not faster: sixteenth session, two leases,
// bf16 [16384, H] forward, 2 stages against as many as fit (LayerNorm 6 at 4096 and 8192, RMS 3
// at 4096 and 4 at 8192): LayerNorm 4096 0.0803 -> 0.0787 and 0.0814 -> 0.0797 ms, 8192 0.1486
// -> 0.1455 and 0.1496 -> 0.1473; RMS 4096 0.0727 -> 0.0722 and 0.0733 -> 0.0732, 8192 0.1372
// -> 0.1363 and 0.1377 -> 0.1373. Each block still has its next row in flight while it works
// (32 to 56 KiB a multiprocessor at these shapes); why the deeper rings were slower was not
// established (the bytes moved are the same).
constexpr uint32_t kForwardStages = 2;

// One block a row (kForwardDirect): the grid is the rows (up to the most blocks a grid has; a
// block past that many rows takes more by stride).
template <int VEC, int CPT, int D, bool LAYER>
void forward_direct(const NormForwardArgs& a, const NormLayout& l, void* stream) {
  constexpr int64_t kMaxGrid = 0x7fffffff;
  NormForwardArgs direct = a;
  direct.row_claims = nullptr;
  norm_forward_kernel<VEC, CPT, D, LAYER, true>
      <<<static_cast<unsigned>(std::min(a.rows, kMaxGrid)), l.threads, 0, stream_of(stream)>>>(direct, RingLayout{});
}

// Reads the rows directly, one a block, where kForwardDirect says so, else streams them through
// a ring with the compile-time dtype D when they can be, else reads them directly by the
// persistent grid (kMixed).
template <int VEC, int CPT, int D, bool LAYER>
void forward_streamed_or_not(const NormForwardArgs& a, const NormLayout& l, RingLayout stage,
                             int device, int sm_margin, void* stream) {
  if constexpr (kForwardDirect<VEC, CPT, LAYER>) {
    if (sm_margin == 0 && norm_forward_reads_directly(LAYER, VEC, (a.hidden + VEC - 1) / VEC)) {
      forward_direct<VEC, CPT, D, LAYER>(a, l, stream);
      return;
    }
  }
  // The block's copy of beta where this instantiation reads it (kForwardBetaShared).
  if (kForwardBetaShared<VEC, D, LAYER> && a.bias != nullptr)
    stage.parameter_bytes = parameter_copy_bytes(a.hidden, VEC);
  const RingLayout ring =
      with_stages(stage, reinterpret_cast<const void*>(norm_forward_kernel<VEC, CPT, D, LAYER>),
                  l.threads, device, kForwardStages);
  if (ring.stages != 0) forward_with<VEC, CPT, D, LAYER>(a, l, ring, device, sm_margin, stream);
  else forward_with<VEC, CPT, kMixed, LAYER>(a, l, RingLayout{}, device, sm_margin, stream);
}

template <int VEC, int CPT, bool LAYER>
void forward_for(const NormForwardArgs& a, const NormLayout& l, int device, int sm_margin,
                 void* stream) {
  const int64_t x_bytes = a.hidden * element_bytes(a.x_dtype);
  // Beta has the weight's dtype; the streamed kernels take it as raw bits of x's.
  const bool parameters = a.weight != nullptr || (LAYER && a.bias != nullptr);
  const int d = uniform_dtype(a.x_dtype, {a.y_dtype, parameters ? a.weight_dtype : a.x_dtype});
  const RingLayout stage =
      d != kMixed && a.vector_ok != 0
          ? ring_stage({{a.x, a.x_row_bytes, x_bytes}, {a.residual, a.residual_row_bytes, x_bytes}})
          : RingLayout{};
  const bool streamed = stage.stage_bytes != 0 && with_streamed_dtype<VEC>(d, [&](auto dtype) {
    forward_streamed_or_not<VEC, CPT, decltype(dtype)::value, LAYER>(a, l, stage, device, sm_margin, stream);
  });
  if (!streamed) forward_with<VEC, CPT, kMixed, LAYER>(a, l, RingLayout{}, device, sm_margin, stream);
}

}  // namespace

void launch_norm_forward(const NormForwardArgs& a, const NormLayout& layout, int device,
                         int sm_margin, void* stream) {
  with_layout<true>(layout, "norm_forward_kernel", [&](auto vec, auto cpt) {
    if (a.kind == SY_NORM_LAYER) forward_for<decltype(vec)::value, decltype(cpt)::value, true>(a, layout, device, sm_margin, stream);
    else forward_for<decltype(vec)::value, decltype(cpt)::value, false>(a, layout, device, sm_margin, stream);
  });
  check_cuda(cudaGetLastError(), "launching norm_forward_kernel");
}

}  // namespace switchyard::te
