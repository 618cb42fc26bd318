// te's normalization backward (README.md, "Normalization"): its kernels and their launchers.
//
//   norm_backward_kernel  persistent blocks over the plan's fixed chunks of rows; a
//                         thread accumulates dgamma/dbeta of its columns over the chunk's rows
//                         in registers and writes them as the chunk's partial; dx per row
//   norm_finalize_kernel  dgamma/dbeta = the chunk partials summed in a fixed order
//
// STREAMED kernels take their rows from a ring of shared-memory stages that bulk copies (sm_90
// cp.async.bulk) fill ahead of the rows' use (up to kSplitRowsAhead rows where dy has a ring of its
// own), so the loads in flight do not depend on the registers a thread holds; the other
// instantiation reads global memory directly (rows that are not 16-byte aligned or whose stages do
// not fit). Both do the same arithmetic in the same order, so a row's bits never depend on the
// path, and every order of summation is fixed by the plan (hidden, x dtype, rows), never by the
// grid: sm_margin changes the speed only.
#include "norm_kernels.hpp"

#include "cuda_support.hpp"
#include "norm_device.cuh"
#include "norm_launch.cuh"
#include "te_device.cuh"

#include <switchyard/norm.h>
#include <switchyard/plugin_helpers.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

namespace switchyard::te {
namespace {

// ---- backward ------------------------------------------------------------------------------------

// What a backward instantiation computes, fixed at compile time so that each keeps only the
// registers and instructions of its kind: RMS/L2 rows have no mean (x̂ = x·rstd) and no
// mean(gh) term; LayerNorm rows have both, and a dbeta sum per element when dbias is asked.
enum NormGradMode : int { kGradNoMean = 0, kGradLayer = 1, kGradLayerBias = 2 };

// The x term t of one element: x − mean (x for rows without a mean, exactly (x − 0)), so that
// x̂ = t·rstd; memory-efficient, x̂ itself from y ((y − β)/γ_eff, y/γ_eff, y for L2).
template <bool kMean>
__device__ __forceinline__ float x_term_of(float v, float mean, float gamma, float beta,
                                           bool memory_efficient, bool rms) {
  if (!memory_efficient) return kMean ? v - mean : v;
  if (kMean) return (v - beta) / gamma;
  if (rms) return v / gamma;
  return v;  // L2: y is x̂
}

// dx = rstd·(gh − mean(gh) − x̂·mean(gh·x̂)) as fma(t, c, fma(gh, a, b)): a = rstd,
// b = −rstd·mean(gh) (0 without a mean), c = −rstd·mean(gh·x̂), times rstd again when t is
// x − mean rather than x̂. Two FMAs an element once the row's sums are known.
struct DxTerms {
  float a, b, c;
};

template <bool kMean>
__device__ __forceinline__ DxTerms dx_terms(float mean_gh, float mean_gh_xhat, float rstd,
                                            bool memory_efficient) {
  const float t_scale = memory_efficient ? rstd : rstd * rstd;
  return {rstd, kMean ? -rstd * mean_gh : 0.0f, -t_scale * mean_gh_xhat};
}

__device__ __forceinline__ float dx_of(float gh, float t, const DxTerms& k) {
  return __fmaf_rn(t, k.c, __fmaf_rn(gh, k.a, k.b));
}

// One chunk's partial: this thread's columns, from registers (vector stores when every row of
// the partial is 16-byte aligned).
template <int VEC, int CPT>
__device__ __forceinline__ void store_partial(float* partial, const float (&sums)[CPT][VEC],
                                              int thread, int64_t hidden) {
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int64_t col0 = first_column(thread, c) * VEC;
    const int valid = valid_count(col0, VEC, hidden);
    if (valid == VEC && hidden % 4 == 0) {
#pragma unroll
      for (int e = 0; e < VEC; e += 4)
        *reinterpret_cast<float4*>(partial + col0 + e) =
            make_float4(sums[c][e], sums[c][e + 1], sums[c][e + 2], sums[c][e + 3]);
      continue;
    }
#pragma unroll
    for (int e = 0; e < VEC; ++e)
      if (e < valid) partial[col0 + e] = sums[c][e];
  }
}

// Chunk c of a streamed row as floats (the stage holds whole, aligned rows).
template <int VEC, int D>
__device__ __forceinline__ void stage_floats(const char* row, int64_t col0, float (&out)[VEC]) {
  RawChunk r;
  load_raw<VEC>(r, row, col0, VEC, true);
#pragma unroll
  for (int e = 0; e < VEC; ++e) out[e] = raw_get<VEC>(r, e, D == static_cast<int>(DType::BF16));
}

// Whether a backward instantiation keeps the row's dy·γ_eff in registers from pass 1 to pass 2
// (streamed 16-bit rows without a dbeta sum), so that pass 2 reads and converts only x: RMS
// 8192 backward 0.2302 -> 0.2260 ms against pass 2 re-reading dy and gamma. At 32 elements a
// thread the dbeta sums leave no registers for it; at 16 they do.
template <int VEC, int CPT, int MODE, int D>
constexpr bool kBackwardHoldGh = D != kMixed && VEC == 8 && (MODE != kGradLayerBias || CPT <= 2);

// Whether a backward instantiation streams dy through a ring of its own (BackwardRings): those
// whose pass 2 does not read dy, at up to 16 elements a thread (at 32, 128-thread blocks at
// H = 4096, the second ring's positions and cursor spilled 32 bytes: backward 0.1142 ->
// 0.1200 ms).
template <int VEC, int CPT, int MODE, int D>
constexpr bool kBackwardSplitRing = kBackwardHoldGh<VEC, CPT, MODE, D> && CPT <= 2;

// Whether a backward instantiation keeps gamma in shared memory (backward_rows): streamed
// 16-bit rows.
template <int VEC, int D>
constexpr bool kBackwardGammaShared = D != kMixed && VEC == 8;

// The rows of the backward; G: the GammaForm. Every path does the same arithmetic in the same
// order.
template <int VEC, int CPT, int MODE, int D, int G>
__device__ __forceinline__ void backward_rows(const NormBackwardArgs& a, const BackwardRings& rings) {
  constexpr bool STREAMED = D != kMixed;
  constexpr bool kSplit = kBackwardSplitRing<VEC, CPT, MODE, D>;
  const RingLayout& layout = rings.late;
  constexpr bool kMean = MODE != kGradNoMean;
  constexpr bool kBeta = MODE == kGradLayerBias;
  constexpr bool kBf16 = D == static_cast<int>(DType::BF16);
  extern __shared__ __align__(128) unsigned char ring_memory[];
  __shared__ uint64_t full[kMaxStages];
  __shared__ uint64_t early_full[kSplit ? kMaxStages : 1];
  __shared__ GroupScratch<float2> scratch;
  const Group g{0, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  const bool vector = STREAMED || a.vector_ok != 0;  // streamed: every row is aligned
  const bool rms = a.kind == SY_NORM_RMS;
  // Memory-efficient rows are never streamed: the streamed kernels have no per-element
  // division by gamma.
  const bool memory_efficient = !STREAMED && a.memory_efficient != 0;
  const bool with_mean = kMean && !memory_efficient;
  const bool want_gamma = a.partial_gamma != nullptr;
  const bool zero_centered = a.zero_centered != 0;
  const int64_t hidden = a.hidden;
  const float h_count = static_cast<float>(hidden);
  const RingSources src{{static_cast<const char*>(a.dy), static_cast<const char*>(a.x_or_y),
                         static_cast<const char*>(a.d_residual_out)},
                        {a.dy_row_bytes, a.x_or_y_row_bytes, a.d_residual_out_row_bytes}};
  constexpr bool kStrided = kStridedChunks<VEC, CPT>;
  using Rows = ChunkRows<kStrided>;
  const Ring ring{layout, ring_memory, full};
  ChunkCursor<kStrided> next(a);  // thread 0's: the next row to fill
  StagePosition filled;
  if constexpr (STREAMED) ring.start(next, filled, src);
  unsigned char* const late_end = ring_memory + layout.stages * layout.stage_bytes;
  const Ring early{rings.early, late_end, early_full};
  ChunkCursor<kStrided> early_next(a);  // thread 0's, for dy's ring (kSplit)
  StagePosition early_filled;
  if constexpr (kSplit) early.start(early_next, early_filled, src);

  // Streamed: this thread's chunks c < live are in the row (the same in every row). Gamma, as
  // raw bits of x's dtype, sits in shared memory after the ring's stages (parameter_bytes),
  // chunk i at gamma_shared[i]: each thread stores its own chunks once and reads them back
  // every row, so no barrier, no registers held for the kernel and gamma's form fixed per
  // launch. Against gamma in registers where they allowed it (not with the dbeta sums, which
  // loaded gamma per chunk with the run-time form): LayerNorm 4096 backward 0.1459 -> 0.1225
  // ms, RMS 4096 0.1196 -> 0.1156. fp32 rows (not kBackwardGammaShared) load gamma per chunk
  // with the run-time form, as before: with the form fixed their LayerNorm instantiations spill.
  constexpr bool kGammaShared = kBackwardGammaShared<VEC, D> && G != kGammaOne;
  int live = CPT;
  RawChunk* const gamma_shared =
      reinterpret_cast<RawChunk*>(late_end + rings.early.stages * rings.early.stage_bytes);
  if constexpr (STREAMED) {
    live = 0;
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int64_t col0 = first_column(g.thread, c) * VEC;
      if (col0 >= hidden) continue;
      live = c + 1;
      if constexpr (kGammaShared)
        load_raw<VEC>(gamma_shared[first_column(g.thread, c)], a.weight, col0, VEC, true);
    }
  }

  // dgamma/dbeta of this thread's columns over a chunk's rows, in registers.
  float sum_dy_xhat[CPT][VEC], sum_dy[kBeta ? CPT : 1][VEC];
  // Streamed: the row's dy·γ_eff kept from pass 1 to pass 2, which then reads only x.
  constexpr bool kHoldGh = kBackwardHoldGh<VEC, CPT, MODE, D>;
  float held_gh[kHoldGh ? CPT : 1][VEC];
  int parity = 0;
  StagePosition at;        // this row's stage
  StagePosition early_at;  // this row's stage in dy's ring (kSplit)
  bool first_row = true;  // of the block: no earlier row's stage to refill after its reduction
  const int64_t chunk_step = gridDim.x;
  int64_t chunk = blockIdx.x;
  // A row's statistics are loaded one row ahead, off the critical path.
  float rstd_next = 0.0f, mean_next = 0.0f;
  if (chunk < a.chunk_count) {
    rstd_next = a.rstd[Rows::first(a, chunk)];
    if (with_mean) mean_next = a.mean[Rows::first(a, chunk)];
  }
  for (; chunk < a.chunk_count; chunk += chunk_step) {
    const int64_t first = Rows::first(a, chunk), end = Rows::end(a, first), step = Rows::step(a);
#pragma unroll
    for (int c = 0; c < CPT; ++c)
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        sum_dy_xhat[c][e] = 0.0f;
        if constexpr (kBeta) sum_dy[c][e] = 0.0f;
      }
    for (int64_t row = first; row < end; row += step, at.advance(layout.stages)) {
      const float rstd = rstd_next, mean = mean_next;
      const int64_t ahead = row + step < end                     ? row + step
                            : chunk + chunk_step < a.chunk_count ? Rows::first(a, chunk + chunk_step)
                                                                 : -1;
      if (ahead >= 0) {
        rstd_next = a.rstd[ahead];
        if (with_mean) mean_next = a.mean[ahead];
      }
      const char* dy_row = static_cast<const char*>(a.dy) + row * a.dy_row_bytes;
      const char* xy_row = static_cast<const char*>(a.x_or_y) + row * a.x_or_y_row_bytes;
      const char* dres_row =
          a.d_residual_out != nullptr
              ? static_cast<const char*>(a.d_residual_out) + row * a.d_residual_out_row_bytes
              : nullptr;
      if constexpr (STREAMED) {
        const char* stage = ring.wait(at);
        dy_row = kSplit ? early.wait(early_at) + rings.early.offset[0] : stage + layout.offset[0];
        xy_row = stage + layout.offset[1];
        if (dres_row != nullptr) dres_row = stage + layout.offset[2];
      }

      // gamma_eff, dy and x (or y) of chunk c; false when the chunk is past the row.
      auto chunk_inputs = [&](int c, int& valid, float(&gamma)[VEC], float(&beta)[VEC],
                              float(&dy)[VEC], float(&v)[VEC]) {
        const int64_t col0 = first_column(g.thread, c) * VEC;
        if constexpr (STREAMED) {
          valid = VEC;
          if (c >= live) return false;
          if constexpr (G == kGammaRuntime) {
            load_parameters<D, VEC>(a.weight, nullptr, a.weight_dtype, zero_centered, col0, VEC,
                                    true, gamma, beta);
          } else {
            // With kGammaOne (no weight) gamma_of reads no chunk: gamma is 1.
            gamma_of<G, VEC>(gamma_shared[first_column(g.thread, c)], kBf16, gamma);
#pragma unroll
            for (int e = 0; e < VEC; ++e) beta[e] = 0.0f;
          }
          stage_floats<VEC, D>(dy_row, col0, dy);
          stage_floats<VEC, D>(xy_row, col0, v);
          return true;
        } else {
          valid = chunk_valid<VEC, false>(col0, hidden);
          if (valid == 0) return false;
          load_parameters<D, VEC>(a.weight, memory_efficient ? a.bias : nullptr, a.weight_dtype,
                                  zero_centered, col0, valid, vector, gamma, beta);
          load_as<D, VEC>(a.y_dtype, dy_row, col0, valid, vector, 0.0f, dy);
          load_as<D, VEC>(a.x_or_y_dtype, xy_row, col0, valid, vector, 0.0f, v);
          return true;
        }
      };

      // Pass 1: the row's sums, and this thread's dgamma/dbeta terms.
      float sum_gh = 0.0f, sum_gh_xhat = 0.0f;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        int valid;
        float gamma[VEC], beta[VEC], dy[VEC], v[VEC];
        if (!chunk_inputs(c, valid, gamma, beta, dy, v)) continue;
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          if (!STREAMED && e >= valid) continue;  // a streamed chunk is whole
          const float t = x_term_of<kMean>(v[e], mean, gamma[e], beta[e], memory_efficient, rms);
          const float x_hat = memory_efficient ? t : t * rstd;
          sum_dy_xhat[c][e] += dy[e] * x_hat;
          if constexpr (kBeta) sum_dy[c][e] += dy[e];
          const float g_h = dy[e] * gamma[e];  // gamma is 1 for L2
          if constexpr (kHoldGh) held_gh[c][e] = g_h;
          if constexpr (kMean) sum_gh += g_h;
          sum_gh_xhat += g_h * x_hat;
        }
      }
      // LayerNorm's two sums fold the warps pairwise. Same lease, the 16-warp backward at H = 8192:
      // LayerNorm 0.2288 -> 0.2180 ms (fewer instructions in a kernel whose issue slots are two
      // thirds busy), but RMS 0.2112 -> 0.2285, so RMS/L2 keep the warps in order.
      using RowSums = std::conditional_t<kMean, PairwiseSumMerge, SumMerge>;
      const float2 sums = group_reduce(make_float2(sum_gh, sum_gh_xhat), g, scratch, parity, RowSums{});
      // The reduction was a barrier: every thread is done with the previous iteration's stage,
      // and (kSplit) with this row's dy, which pass 2 does not read.
      if constexpr (STREAMED)
        if (g.thread == 0) {
          if constexpr (kSplit) early.refill(early_next, early_filled, src);
          if (!first_row) ring.refill(next, filled, src);
        }
      first_row = false;
      const DxTerms k = dx_terms<kMean>(sums.x / h_count, sums.y / h_count, rstd, memory_efficient);

      // Pass 2: dx, from the same inputs again (the ring or L1); with kHoldGh only x, gh is
      // still in registers.
      char* dx_row = static_cast<char*>(a.dx) + row * a.dx_row_bytes;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        int valid;
        float gamma[VEC], beta[VEC], dy[VEC], v[VEC], dx[VEC];
        const int64_t col0 = first_column(g.thread, c) * VEC;
        if constexpr (kHoldGh) {
          if (c >= live) continue;
          valid = VEC;
          stage_floats<VEC, D>(xy_row, col0, v);
#pragma unroll
          for (int e = 0; e < VEC; ++e) dx[e] = dx_of(held_gh[c][e], kMean ? v[e] - mean : v[e], k);
        } else {
          if (!chunk_inputs(c, valid, gamma, beta, dy, v)) continue;
#pragma unroll
          for (int e = 0; e < VEC; ++e)
            dx[e] = dx_of(dy[e] * gamma[e],
                          x_term_of<kMean>(v[e], mean, gamma[e], beta[e], memory_efficient, rms), k);
        }
        if (dres_row != nullptr) {
          // Read before dx is stored: dx may be d_residual_out itself (this thread's elements).
          float dres[VEC];
          load_as<D, VEC>(a.x_dtype, dres_row, col0, valid, vector, 0.0f, dres);
#pragma unroll
          for (int e = 0; e < VEC; ++e) dx[e] += dres[e];
        }
        store_as<D, VEC>(a.x_dtype, dx_row, col0, valid, vector, dx);
      }
      if constexpr (kSplit) early_at.advance(rings.early.stages);
    }
    if (want_gamma) store_partial<VEC, CPT>(a.partial_gamma + chunk * hidden, sum_dy_xhat, g.thread, hidden);
    if constexpr (kBeta) store_partial<VEC, CPT>(a.partial_beta + chunk * hidden, sum_dy, g.thread, hidden);
  }
}

// MODE: NormGradMode. D and the ring as in the forward.
template <int VEC, int CPT, int MODE, int D>
__global__ void __launch_bounds__(kNormMaxBlock, 1)
    norm_backward_kernel(NormBackwardArgs a, BackwardRings rings) {
  // The finalize may be scheduled now: it waits for this grid before it reads the partials.
  allow_dependent_launch();
  with_gamma_form<kBackwardGammaShared<VEC, D>>(a.weight, a.zero_centered, [&](auto form) {
    backward_rows<VEC, CPT, MODE, D, decltype(form)::value>(a, rings);
  });
}

// ---- finalize ----------------------------------------------------------------------------------

constexpr int kFinalizeColumns = 32;
constexpr int kFinalizeSegments = 32;

// Block (32 columns x 32 segments): segment s sums chunks s, s + 32, ... in order, then the 32
// segment sums are added in order. grid.y: 0 = dgamma, 1 = dbeta.
__global__ void __launch_bounds__(kFinalizeColumns* kFinalizeSegments)
    norm_finalize_kernel(NormFinalizeArgs a) {
  wait_for_previous_grid();  // the backward's partials
  __shared__ float sums[kFinalizeSegments][kFinalizeColumns];
  const bool beta = blockIdx.y == 1;
  const float* partial = beta ? a.partial_beta : a.partial_gamma;
  void* out = beta ? a.dbias : a.dweight;
  if (out == nullptr || partial == nullptr) return;  // uniform per block
  const int lane = static_cast<int>(threadIdx.x) % kFinalizeColumns;
  const int segment = static_cast<int>(threadIdx.x) / kFinalizeColumns;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kFinalizeColumns + lane;
  float s = 0.0f;
  if (col < a.hidden) {
    // Unrolled so that the loads of a thread's partials (16 at 512 chunks) are all in flight
    // before the additions, which stay in order.
#pragma unroll 16
    for (int64_t c = segment; c < a.chunk_count; c += kFinalizeSegments) s += partial[c * a.hidden + col];
  }
  sums[segment][lane] = s;
  __syncthreads();
  if (segment != 0 || col >= a.hidden) return;
  float total = sums[0][lane];
  for (int q = 1; q < kFinalizeSegments; ++q) total += sums[q][lane];
  if (a.accumulate != 0) total += static_cast<const float*>(out)[col];
  store_one(a.grad_dtype, out, col, total);
}

// ---- launch ------------------------------------------------------------------------------------

// How far ahead the split rings run: 3 rows, not as far as the budget allows. Sixteenth session,
// same lease, bf16 [16384, 8192] backward (512 x 16, one block a multiprocessor), rows ahead
// 2 / 3 / 4 / 6 (the budget's): RMS 0.2168 / 0.2087 / 0.2100 / 0.2119 ms, LayerNorm 0.2204 /
// 0.2130 / 0.2142 / 0.2179 (3 with the forward's two stages, kForwardStages; the backward's own
// code is the same). As with the forward's ring, why more rows in flight are slower was not
// established.
constexpr int64_t kSplitRowsAhead = 3;

// Split rings (BackwardRings) up to kSplitRowsAhead rows ahead, as the budget allows: dy `ahead`
// rows and x `ahead` rows after the one pass 2 still reads, so early takes `ahead` stages and
// late `ahead` + 1; late.stages = 0 when not even one row ahead fits.
BackwardRings with_split_stages(RingLayout early, RingLayout late, const void* kernel, int threads,
                                int device) {
  BackwardRings r{late, early};
  r.late.stages = r.early.stages = 0;
  if (early.stage_bytes == 0 || late.stage_bytes == 0) return r;
  budget_for_ring(kernel, threads, device, late.parameter_bytes, [&](int per_block) {
    const int64_t ahead = (per_block - static_cast<int64_t>(late.stage_bytes)) /
                          (static_cast<int64_t>(early.stage_bytes) + late.stage_bytes);
    if (ahead < 1) return false;
    r.early.stages = static_cast<uint32_t>(std::min<int64_t>({ahead, kSplitRowsAhead, kMaxStages}));
    r.late.stages = std::min(r.early.stages + 1, kMaxStages);
    return true;
  });
  return r;
}

template <int VEC, int CPT, int MODE, int D>
void backward_with(const NormBackwardArgs& a, const NormLayout& l, const BackwardRings& ring,
                   int device, int sm_margin, void* stream) {
  const auto kernel = norm_backward_kernel<VEC, CPT, MODE, D>;
  const size_t shared = ring_bytes(ring);
  const bool split = kBackwardSplitRing<VEC, CPT, MODE, D>;
  if (D != kMixed && (ring.late.stages == 0 || (split && ring.early.stages == 0)))
    sy::fail(SY_ERR_INTERNAL, "te: norm_backward_kernel streamed without a ring");
  static std::atomic<uint64_t> raised{0};  // this instantiation's
  if (shared != 0) allow_all_shared(reinterpret_cast<const void*>(kernel), device, "norm_backward_kernel", raised);
  const int grid = grid_for(reinterpret_cast<const void*>(kernel), l.threads, shared,
                            a.chunk_count, device, sm_margin);
  kernel<<<grid, l.threads, shared, stream_of(stream)>>>(a, ring);
}

// The backward's streamed rows: every tensor in one stage, dy alone, the others alone.
struct BackwardStages {
  RingLayout all, dy, rest;
};

// Streams the rows through rings sized for the kernel of MODE when they can be, else reads
// them directly (kMixed).
template <int VEC, int CPT, int MODE, int D>
void backward_streamed_or_not(const NormBackwardArgs& a, const NormLayout& l,
                              const BackwardStages& stage, int device, int sm_margin, void* stream) {
  const void* kernel = reinterpret_cast<const void*>(norm_backward_kernel<VEC, CPT, MODE, D>);
  BackwardRings ring{};
  if constexpr (kBackwardSplitRing<VEC, CPT, MODE, D>)
    ring = with_split_stages(stage.dy, stage.rest, kernel, l.threads, device);
  else
    ring.late = with_stages(stage.all, kernel, l.threads, device);
  if (ring.late.stages != 0) backward_with<VEC, CPT, MODE, D>(a, l, ring, device, sm_margin, stream);
  else backward_with<VEC, CPT, MODE, kMixed>(a, l, BackwardRings{}, device, sm_margin, stream);
}

// Calls fn(std::integral_constant<int, MODE>) for the NormGradMode of the call.
template <class Fn>
void with_grad_mode(const NormBackwardArgs& a, Fn&& fn) {
  using std::integral_constant;
  if (a.kind != SY_NORM_LAYER) return fn(integral_constant<int, kGradNoMean>{});
  if (a.partial_beta != nullptr) return fn(integral_constant<int, kGradLayerBias>{});
  fn(integral_constant<int, kGradLayer>{});
}

template <int VEC, int CPT>
void backward_for(const NormBackwardArgs& a, const NormLayout& l, int device, int sm_margin,
                  void* stream) {
  const int d = uniform_dtype(a.x_dtype, {a.y_dtype, a.x_or_y_dtype,
                                          a.weight != nullptr ? a.weight_dtype : a.x_dtype});
  const int64_t row = a.hidden * element_bytes(a.x_dtype);
  const Stream dy{a.dy, a.dy_row_bytes, row}, x_or_y{a.x_or_y, a.x_or_y_row_bytes, row},
      d_residual_out{a.d_residual_out, a.d_residual_out_row_bytes, row};
  BackwardStages stage;
  if (d != kMixed && a.vector_ok != 0 && a.memory_efficient == 0) {
    stage.all = ring_stage({dy, x_or_y, d_residual_out});
    stage.dy = ring_stage({dy, Stream{}, Stream{}});
    stage.rest = ring_stage({Stream{}, x_or_y, d_residual_out});
  }
  if (VEC == 8 && stage.all.stage_bytes != 0 && a.weight != nullptr) {
    stage.all.parameter_bytes = parameter_copy_bytes(a.hidden, VEC);
    stage.rest.parameter_bytes = stage.all.parameter_bytes;
  }
  with_grad_mode(a, [&](auto mode) {
    constexpr int kMode = decltype(mode)::value;
    const bool streamed = stage.all.stage_bytes != 0 && with_streamed_dtype<VEC>(d, [&](auto dtype) {
      backward_streamed_or_not<VEC, CPT, kMode, decltype(dtype)::value>(a, l, stage, device, sm_margin, stream);
    });
    if (!streamed) backward_with<VEC, CPT, kMode, kMixed>(a, l, BackwardRings{}, device, sm_margin, stream);
  });
}

}  // namespace

void launch_norm_backward(const NormBackwardArgs& a, const NormLayout& layout, int device,
                          int sm_margin, void* stream) {
  with_layout<false>(layout, "norm_backward_kernel", [&](auto vec, auto cpt) {
    backward_for<decltype(vec)::value, decltype(cpt)::value>(a, layout, device, sm_margin, stream);
  });
  check_cuda(cudaGetLastError(), "launching norm_backward_kernel");
}

void launch_norm_finalize(const NormFinalizeArgs& a, void* stream) {
  const dim3 grid(static_cast<unsigned>((a.hidden + kFinalizeColumns - 1) / kFinalizeColumns), 2);
  // Programmatic dependent launch: the finalize is scheduled while the backward's last blocks
  // run, instead of after its end (H200, bf16 [16384, 4096] backward: RMS 0.1152 -> 0.1142 ms,
  // LayerNorm 0.1218 -> 0.1201).
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(kFinalizeColumns * kFinalizeSegments);
  config.stream = stream_of(stream);
  cudaLaunchAttribute attribute = programmatic_serialization();
  config.attrs = &attribute;
  config.numAttrs = 1;
  check_cuda(cudaLaunchKernelEx(&config, norm_finalize_kernel, a),
             "cudaLaunchKernelEx(norm_finalize_kernel)");
}

}  // namespace switchyard::te
