// te's normalization kernels (README.md, "Normalization").
//
//   norm_forward_kernel   persistent blocks; a block holds one row at a time in registers
//                         (thread t: chunks t, t + threads, ...), merges (count, mean, M2)
//                         with Chan's formula (LayerNorm) or the sum of squares (RMS/L2),
//                         and writes y, mean, rstd (and h = x + residual)
//   norm_backward_kernel  persistent blocks over the fixed chunks of rows_per_chunk rows; a
//                         thread accumulates dgamma/dbeta of its columns over the chunk's rows
//                         in registers and writes them as the chunk's partial; dx per row
//   norm_finalize_kernel  dgamma/dbeta = the chunk partials summed in a fixed order
//
// STREAMED kernels take their rows from a ring of shared-memory stages that bulk copies
// (sm_90 cp.async.bulk) fill several rows ahead, so the loads in flight do not depend on the
// registers a thread holds; the other instantiation reads global memory directly (rows that
// are not 16-byte aligned or whose stages do not fit). Both do the same arithmetic in the
// same order, so a row's bits never depend on the path, and every order of summation is
// fixed by the plan (hidden, x dtype, rows), never by the grid: sm_margin changes the speed
// only.
#include "norm_kernels.hpp"

#include "cuda_support.hpp"
#include "stage_ring.cuh"
#include "te_device.cuh"

#include <switchyard/norm.h>
#include <switchyard/cuda/bulk_copy.cuh>
#include <switchyard/plugin_helpers.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace switchyard::te {
namespace {

__device__ __forceinline__ int valid_count(int64_t col0, int vec, int64_t hidden) {
  const int64_t left = hidden - col0;
  return left >= vec ? vec : left > 0 ? static_cast<int>(left) : 0;
}

// The elements of the chunk at col0: VEC, fewer at the row's end, 0 past it. WHOLE (a streamed
// row, hidden % VEC == 0): VEC or 0, which lets the compiler drop the per-element paths.
template <int VEC, bool WHOLE>
__device__ __forceinline__ int chunk_valid(int64_t col0, int64_t hidden) {
  const int valid = valid_count(col0, VEC, hidden);
  if constexpr (WHOLE) return valid > 0 ? VEC : 0;
  return valid;
}

// D: the dtype of every tensor and parameter of the call when the kernel knows it at compile
// time (no run-time dtype switch per chunk: fewer registers and instructions), kMixed when it
// reads each dtype from the arguments.
constexpr int kMixed = -1;

template <int D, int N>
__device__ __forceinline__ void load_as(DType d, const void* row, int64_t col0, int valid,
                                        bool vector, float pad, float (&out)[N]) {
  if constexpr (D == kMixed) load_floats<N>(d, row, col0, valid, vector, pad, out);
  else load_floats<static_cast<DType>(D), N>(row, col0, valid, vector, pad, out);
}

template <int D, int N>
__device__ __forceinline__ void store_as(DType d, void* row, int64_t col0, int valid, bool vector,
                                         const float (&in)[N]) {
  if constexpr (D == kMixed) store_floats<N>(d, row, col0, valid, vector, in);
  else store_floats<static_cast<DType>(D), N>(row, col0, valid, vector, in);
}

// gamma_eff (1 + gamma with zero-centred gamma, added in fp32; 1 without gamma) and beta of
// chunk [col0, col0 + valid).
template <int D, int VEC>
__device__ __forceinline__ void load_parameters(const void* weight, const void* bias, DType d,
                                                bool zero_centered, int64_t col0, int valid,
                                                bool vector, float (&gamma)[VEC],
                                                float (&beta)[VEC]) {
  if (weight != nullptr) {
    load_as<D, VEC>(d, weight, col0, valid, vector, 0.0f, gamma);
    if (zero_centered) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) gamma[e] += 1.0f;
    }
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) gamma[e] = 1.0f;
  }
  if (bias != nullptr) {
    load_as<D, VEC>(d, bias, col0, valid, vector, 0.0f, beta);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) beta[e] = 0.0f;
  }
}

// ---- forward -------------------------------------------------------------------------------------

// 16 bytes of a row of x (VEC elements of x's dtype) held as raw bits: half the registers of
// the floats for 16-bit x, so that two 512-thread blocks fit a multiprocessor (twice the rows,
// hence twice the loads, in flight). Values are converted where they are used, exactly.
struct alignas(16) RawChunk {
  uint32_t u[4];
};

template <int VEC>
__device__ __forceinline__ float raw_get(const RawChunk& c, int e, bool bf16) {
  if constexpr (VEC == 4) {
    return __uint_as_float(c.u[e]);
  } else {
    const uint32_t word = c.u[e >> 1];
    // bf16 is the top half of an fp32: one shift or one mask (a shift back and forth would
    // cost a byte permute as well).
    if (bf16) return __uint_as_float((e & 1) != 0 ? word & 0xffff0000u : word << 16);
    const uint32_t bits = (e & 1) != 0 ? word >> 16 : word & 0xffffu;
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  }
}

// Element e = v rounded once to x's dtype.
template <int VEC>
__device__ __forceinline__ void raw_set(RawChunk& c, int e, bool bf16, float v) {
  if constexpr (VEC == 4) {
    c.u[e] = __float_as_uint(v);
  } else {
    const uint32_t bits =
        bf16 ? DT<DType::BF16>::from_float(v) : DT<DType::F16>::from_float(v);
    uint32_t& word = c.u[e >> 1];
    word = (e & 1) != 0 ? (word & 0xffffu) | (bits << 16) : (word & 0xffff0000u) | bits;
  }
}

// Elements [col0, col0 + valid) of `row`; the rest hold 0 (+0.0 in every dtype).
template <int VEC>
__device__ __forceinline__ void load_raw(RawChunk& c, const void* row, int64_t col0, int valid,
                                         bool vector) {
  constexpr int kBytes = 16 / VEC;
  const char* p = static_cast<const char*>(row) + col0 * kBytes;
  if (vector && valid == VEC) {
    const uint4 w = load16<Cache::Normal>(p);
    c.u[0] = w.x;
    c.u[1] = w.y;
    c.u[2] = w.z;
    c.u[3] = w.w;
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) c.u[i] = 0u;
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    if (e >= valid) continue;
    if constexpr (VEC == 4) {
      c.u[e] = reinterpret_cast<const uint32_t*>(p)[e];
    } else {
      const uint32_t bits = reinterpret_cast<const uint16_t*>(p)[e];
      c.u[e >> 1] |= (e & 1) != 0 ? bits << 16 : bits;
    }
  }
}

// ---- the row ring ----------------------------------------------------------------------------

constexpr uint32_t kMaxStages = 8;
constexpr int kMaxStreams = 3;  // forward: x, residual; backward: dy, x_or_y, d_residual_out

// Where a block's ring keeps one row of each streamed tensor (computed by the host).
struct RingLayout {
  uint32_t stages = 0;
  uint32_t stage_bytes = 0;
  uint32_t offset[kMaxStreams] = {};  // tensor k's row within a stage, 128-byte aligned
  uint32_t bytes[kMaxStreams] = {};   // one row of tensor k; 0: tensor k is not streamed
  // After the stages: the block's copy of one parameter as raw bits of x's dtype, chunk i at
  // chunk i (16 bytes each): gamma in the backward, beta in the LayerNorm forward; 0: none.
  uint32_t parameter_bytes = 0;
};

// The backward's rings. A streamed row that keeps dy·γ_eff in registers (kBackwardSplitRing)
// is done with dy after pass 1 but with x only after pass 2, so dy has a ring of its own
// (`early`), refilled right after the row's reduction, and x (and d_residual_out) another
// (`late`), refilled after the next row's. bf16 [16384, 8192], 512 threads, one block a
// multiprocessor: dy and x 6 rows ahead in the memory that held both 5 ahead in one ring,
// backward 0.2290 -> 0.2108 ms. Otherwise early.stages = 0 and `late` holds every streamed
// tensor. Shared memory: late's stages, early's, then gamma (late.parameter_bytes).
struct BackwardRings {
  RingLayout late;
  RingLayout early;
};

// Tensor k's row r starts at base[k] + r * stride[k] (bytes).
struct RingSources {
  const char* base[kMaxStreams];
  int64_t stride[kMaxStreams];
};

// The rows of a block through a StageRing (stage_ring.cuh): iteration i holds the block's i-th
// row of every streamed tensor. Stages are released by a block barrier (the row's reduction).
struct Ring {
  RingLayout layout;
  StageRing stages;

  __device__ Ring(const RingLayout& l, unsigned char* memory, uint64_t* full)
      : layout(l), stages{memory, full, nullptr, l.stages, l.stage_bytes} {}

  // Thread 0 only: copies row `row` of every streamed tensor into the stage at `at`.
  __device__ void fill(const StagePosition& at, int64_t row, const RingSources& src) const {
    uint32_t total = 0;
#pragma unroll
    for (int k = 0; k < kMaxStreams; ++k) total += layout.bytes[k];
    uint64_t* bar = stages.arm(at, total);
    unsigned char* stage = stages.stage(at);
#pragma unroll
    for (int k = 0; k < kMaxStreams; ++k)
      if (layout.bytes[k] != 0)
        cuda::bulk_load(stage + layout.offset[k], src.base[k] + row * src.stride[k], layout.bytes[k], bar);
  }

  // The stage at `at` (the reader's position, advanced once a row) once its rows have landed.
  __device__ const char* wait(const StagePosition& at) const {
    return reinterpret_cast<const char*>(stages.wait(at));
  }

  // Initialises the barriers and starts the copies of the first `stages` iterations. `next`
  // is thread 0's cursor over the block's rows (the row of the next iteration to fill, -1
  // past the last), `filled` the position of that iteration.
  template <class Cursor>
  __device__ void start(Cursor& next, StagePosition& filled, const RingSources& src) const {
    if (threadIdx.x == 0) stages.init();
    __syncthreads();
    if (threadIdx.x == 0)
      for (uint32_t i = 0; i < layout.stages && next.row >= 0; ++i, next.advance()) {
        fill(filled, next.row, src);
        filled.advance(layout.stages);
      }
  }

  // Thread 0 only, after a barrier that ends every thread's reads of the stage at `filled`
  // (the iteration `stages` before it): the stage takes the block's next row, if it has one.
  template <class Cursor>
  __device__ void refill(Cursor& next, StagePosition& filled, const RingSources& src) const {
    if (next.row < 0) return;
    cuda::bulk_reuse_fence();
    fill(filled, next.row, src);
    filled.advance(layout.stages);
    next.advance();
  }
};

// The forward's rows of a block: blockIdx.x, + gridDim.x, ...; row = -1 past the last.
struct StrideCursor {
  int64_t row, rows;
  __device__ explicit StrideCursor(int64_t total)
      : row(static_cast<int64_t>(blockIdx.x) < total ? static_cast<int64_t>(blockIdx.x) : -1), rows(total) {}
  __device__ void advance() {
    if (row < 0) return;
    row += gridDim.x;
    if (row >= rows) row = -1;
  }
};

// The backward's rows of a block: its chunks blockIdx.x, + gridDim.x, ..., each row by row
// (no division per row); row = -1 past the last. The partition's sizes stay in the kernel's
// parameters (`a`), not in registers: thread 0 keeps two cursors with split rings.
struct ChunkCursor {
  const NormBackwardArgs& a;
  int64_t chunk, end = 0, row = -1;
  __device__ explicit ChunkCursor(const NormBackwardArgs& args) : a(args), chunk(blockIdx.x) { enter(); }
  __device__ void enter() {
    if (chunk >= a.chunk_count) {
      row = -1;
      return;
    }
    row = chunk * a.rows_per_chunk;
    end = row + a.rows_per_chunk < a.rows ? row + a.rows_per_chunk : a.rows;
  }
  __device__ void advance() {
    if (row < 0) return;
    if (++row < end) return;
    chunk += gridDim.x;
    enter();
  }
};

__device__ __forceinline__ int64_t first_column(int thread, int c) {
  return (static_cast<int64_t>(thread) + static_cast<int64_t>(c) * blockDim.x);
}

// ---- forward -------------------------------------------------------------------------------------

// How a streamed kernel forms gamma_eff, decided once per launch so that the per-element loop
// has no run-time choice: 1 (no weight), gamma, or 1 + gamma in fp32 (zero-centred). The
// general kernels (kGammaRuntime) read both from the arguments per chunk (load_parameters).
enum GammaForm : int { kGammaRuntime = -1, kGammaOne = 0, kGammaPlain = 1, kGammaPlusOne = 2 };

__device__ __forceinline__ int gamma_form(const void* weight, int32_t zero_centered) {
  return weight == nullptr ? kGammaOne : zero_centered != 0 ? kGammaPlusOne : kGammaPlain;
}

// Calls rows(std::integral_constant<int, G>) with the launch's GammaForm G when kCompileTime,
// else with kGammaRuntime.
template <bool kCompileTime, class Rows>
__device__ __forceinline__ void with_gamma_form(const void* weight, int32_t zero_centered, Rows&& rows) {
  using std::integral_constant;
  if constexpr (!kCompileTime) {
    rows(integral_constant<int, kGammaRuntime>{});
  } else {
    switch (gamma_form(weight, zero_centered)) {
      case kGammaOne: rows(integral_constant<int, kGammaOne>{}); break;
      case kGammaPlusOne: rows(integral_constant<int, kGammaPlusOne>{}); break;
      default: rows(integral_constant<int, kGammaPlain>{}); break;
    }
  }
}

// An empty asm that the compiler must assume changes v: a value or load derived from v cannot
// be moved out of the loop this sits in.
__device__ __forceinline__ void hide_from_hoisting(uint32_t& v) { asm volatile("" : "+r"(v)); }

// gamma_eff of chunk [col0, col0 + valid) in form G (not kGammaRuntime): loaded per chunk.
template <int G, int D, int VEC>
__device__ __forceinline__ void gamma_of(const void* weight, DType d, int64_t col0, int valid,
                                         bool vector, float (&gamma)[VEC]) {
  static_assert(G != kGammaRuntime, "the general kernels use load_parameters");
  if constexpr (G == kGammaOne) {
#pragma unroll
    for (int e = 0; e < VEC; ++e) gamma[e] = 1.0f;
  } else {
    load_as<D, VEC>(d, weight, col0, valid, vector, 0.0f, gamma);
    if constexpr (G == kGammaPlusOne) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) gamma[e] += 1.0f;
    }
  }
}

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
  Chan r{per_warp, scratch[parity][0].x, scratch[parity][0].y};
  for (int w = 1; w < warps; ++w) {
    const float4 s = scratch[parity][w];
    r = chan_merge_weighted(r, Chan{per_warp, s.x, s.y}, kEqualShare[w + 1]);
  }
  parity ^= 1;
  return make_float2(r.mean, r.m2);
}

// gamma_eff of a chunk kept in registers as raw bits of x's dtype, in form G.
template <int G, int VEC>
__device__ __forceinline__ void gamma_of(const RawChunk& raw, bool bf16, float (&gamma)[VEC]) {
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    gamma[e] = G == kGammaOne ? 1.0f : raw_get<VEC>(raw, e, bf16);
    if constexpr (G == kGammaPlusOne) gamma[e] += 1.0f;
  }
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

// The forward's rows. LAYER: LayerNorm (Chan's merge, y from h − mean), else RMS/L2 (the sum
// of squares; y from h, which is (h − 0) exactly). G: the GammaForm. Rows stream through the
// ring exactly when the dtypes are known (D != kMixed): the host picks that instantiation only
// for aligned rows whose stages fit.
template <int VEC, int CPT, int D, bool LAYER, int G>
__device__ __forceinline__ void forward_rows(const NormForwardArgs& a, const RingLayout& layout) {
  constexpr bool STREAMED = D != kMixed;
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
  // Every thread holds CPT * VEC elements of every row (streamed rows are whole chunks).
  const bool equal_counts = STREAMED && hidden == static_cast<int64_t>(g.threads) * CPT * VEC;
  const int64_t step = gridDim.x;
  const RingSources src{{static_cast<const char*>(a.x), static_cast<const char*>(a.residual), nullptr},
                        {a.x_row_bytes, a.residual_row_bytes, 0}};
  const Ring ring{layout, ring_memory, full};
  StrideCursor next(a.rows);  // thread 0's: the next row to fill
  StagePosition filled;
  if constexpr (STREAMED) ring.start(next, filled, src);
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
  constexpr bool kBetaShared = kForwardBetaShared<VEC, D, LAYER>;
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
  for (int64_t row = blockIdx.x; row < a.rows; row += step, at.advance(layout.stages)) {
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
    if constexpr (STREAMED) {
      const char* stage = ring.wait(at);
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
          m2 += STREAMED || e < valid ? d * d : 0.0f;
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
    if constexpr (STREAMED)
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
// ms against 80 registers and six blocks, when its rows were raw bits; RMS unchanged), 96 at
// 64 (which spill at 72; five blocks at LayerNorm 8192, not four as at the 107 registers it
// takes without a cap: 0.194 -> 0.236 ms), and 112 for rows and gamma held as floats
// (kForwardFloatRow). Otherwise 128, what one block of kNormMaxBlock threads
// can have.
template <int VEC, int CPT, int D, bool LAYER>
constexpr int kForwardMaxRegisters = D == kMixed                              ? 128
                                     : kForwardFloatRow<VEC, CPT, D, LAYER>   ? 112
                                     : CPT > 4                                ? 96
                                                                              : 72;

template <int VEC, int CPT, int D, bool LAYER>
__global__ void __maxnreg__((kForwardMaxRegisters<VEC, CPT, D, LAYER>))
    norm_forward_kernel(NormForwardArgs a, RingLayout layout) {
  with_gamma_form<D != kMixed>(a.weight, a.zero_centered, [&](auto form) {
    forward_rows<VEC, CPT, D, LAYER, decltype(form)::value>(a, layout);
  });
}

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
  const Ring ring{layout, ring_memory, full};
  ChunkCursor next(a);  // thread 0's: the next row to fill
  StagePosition filled;
  if constexpr (STREAMED) ring.start(next, filled, src);
  unsigned char* const late_end = ring_memory + layout.stages * layout.stage_bytes;
  const Ring early{rings.early, late_end, early_full};
  ChunkCursor early_next(a);  // thread 0's, for dy's ring (kSplit)
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
    rstd_next = a.rstd[chunk * a.rows_per_chunk];
    if (with_mean) mean_next = a.mean[chunk * a.rows_per_chunk];
  }
  for (; chunk < a.chunk_count; chunk += chunk_step) {
    const int64_t first = chunk * a.rows_per_chunk;
    const int64_t end = first + a.rows_per_chunk < a.rows ? first + a.rows_per_chunk : a.rows;
#pragma unroll
    for (int c = 0; c < CPT; ++c)
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        sum_dy_xhat[c][e] = 0.0f;
        if constexpr (kBeta) sum_dy[c][e] = 0.0f;
      }
    for (int64_t row = first; row < end; ++row, at.advance(layout.stages)) {
      const float rstd = rstd_next, mean = mean_next;
      const int64_t ahead = row + 1 < end                               ? row + 1
                            : chunk + chunk_step < a.chunk_count ? (chunk + chunk_step) * a.rows_per_chunk
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
      const float2 sums = group_reduce(make_float2(sum_gh, sum_gh_xhat), g, scratch, parity, SumMerge{});
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

// Programmatic dependent launch (sm_90). A kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may be scheduled once every block of the
// kernel ahead of it has called allow_dependent_launch (or ended); wait_for_previous_grid then
// returns once that kernel has completed and its writes are visible. Both are no-ops for
// kernels launched without the attribute.
__device__ __forceinline__ void allow_dependent_launch() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

__device__ __forceinline__ void wait_for_previous_grid() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
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

cudaStream_t stream_of(void* stream) { return static_cast<cudaStream_t>(stream); }

// One streamed tensor: its first row, the distance between rows and the bytes of a row.
struct Stream {
  const void* base = nullptr;  // NULL: absent
  int64_t stride = 0;
  int64_t bytes = 0;
};

// Where a stage keeps each tensor's row (stages still 0), or stage_bytes = 0 when a row cannot
// be bulk-copied (not 16-byte aligned).
RingLayout ring_stage(std::initializer_list<Stream> streams) {
  RingLayout r;
  int k = 0;
  uint32_t stage = 0;
  for (const Stream& s : streams) {
    if (s.base != nullptr) {
      if (!cuda::bulk_copy_ok(s.base, s.bytes) || s.stride % 16 != 0) return RingLayout{};
      r.offset[k] = stage;
      r.bytes[k] = static_cast<uint32_t>(s.bytes);
      stage += static_cast<uint32_t>((s.bytes + 127) / 128 * 128);
    }
    ++k;
  }
  r.stage_bytes = stage;
  return r;
}

// A block's copy of a parameter row of `hidden` elements, VEC to a 16-byte chunk
// (RingLayout::parameter_bytes).
uint32_t parameter_copy_bytes(int64_t hidden, int vec) {
  return static_cast<uint32_t>((hidden + vec - 1) / vec * 16);
}

// The dynamic shared memory a ring may take in each of the blocks of `kernel` that a
// multiprocessor holds by its registers and threads, less `reserved` bytes. A block's share
// of the multiprocessor also pays the kernel's static shared memory and the driver's
// reservation per block: an estimate of those that fell short by a few hundred bytes left one
// 256-thread backward block a multiprocessor at H = 8192, not two.
int ring_budget(const void* kernel, int threads, int device, uint32_t reserved) {
  const DeviceInfo info = device_info(device);
  const int blocks = blocks_per_multiprocessor(kernel, threads, 0, device);
  const int share = std::min(info.max_shared_per_block_optin,
                             info.shared_per_multiprocessor / blocks - info.reserved_shared_per_block);
  return share - static_shared_bytes(kernel) - static_cast<int>(reserved);
}

// As many stages as fit the ring's budget (at most kMaxStages); stages = 0 when fewer than two
// fit.
RingLayout with_stages(RingLayout r, const void* kernel, int threads, int device) {
  if (r.stage_bytes == 0) return r;
  const int per_block = ring_budget(kernel, threads, device, r.parameter_bytes);
  const uint32_t stages = per_block > 0 ? static_cast<uint32_t>(per_block) / r.stage_bytes : 0;
  r.stages = stages >= 2 ? std::min(stages, kMaxStages) : 0;
  return r;
}

size_t ring_bytes(const RingLayout& r) {
  return static_cast<size_t>(r.stages) * r.stage_bytes + r.parameter_bytes;
}

size_t ring_bytes(const BackwardRings& r) {
  return ring_bytes(r.late) + static_cast<size_t>(r.early.stages) * r.early.stage_bytes;
}

// Split rings (BackwardRings) as far ahead as the budget allows: dy `ahead` rows and x
// `ahead` rows after the one pass 2 still reads, so early takes `ahead` stages and late
// `ahead` + 1; late.stages = 0 when not even one row ahead fits.
BackwardRings with_split_stages(RingLayout early, RingLayout late, const void* kernel, int threads,
                                int device) {
  BackwardRings r{late, early};
  r.late.stages = r.early.stages = 0;
  if (early.stage_bytes == 0 || late.stage_bytes == 0) return r;
  const int per_block = ring_budget(kernel, threads, device, late.parameter_bytes);
  const int64_t ahead = (per_block - static_cast<int64_t>(late.stage_bytes)) /
                        (static_cast<int64_t>(early.stage_bytes) + late.stage_bytes);
  if (ahead < 1) return r;
  r.early.stages = static_cast<uint32_t>(std::min<int64_t>(ahead, kMaxStages));
  r.late.stages = std::min(r.early.stages + 1, kMaxStages);
  return r;
}

// Persistent grid: (multiprocessors - sm_margin) x blocks per multiprocessor, at most `units`.
int grid_for(const void* kernel, int block, size_t shared, int64_t units, int device,
             int sm_margin) {
  const DeviceInfo info = device_info(device);
  const int usable = info.multiprocessors - sm_margin;
  if (usable < 1)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             "problem.sm_margin = " + std::to_string(sm_margin) + " leaves none of the " +
                 std::to_string(info.multiprocessors) + " multiprocessors of cuda:" +
                 std::to_string(device) + " to te; use a margin below " +
                 std::to_string(info.multiprocessors));
  const int64_t blocks =
      static_cast<int64_t>(usable) * blocks_per_multiprocessor(kernel, block, shared, device);
  return static_cast<int>(std::min<int64_t>(blocks, units));
}

// The dtype of every tensor of the call, or kMixed.
int uniform_dtype(DType x, std::initializer_list<DType> others) {
  for (DType d : others)
    if (d != x) return kMixed;
  return static_cast<int>(x);
}

// Calls fn(std::integral_constant<int, D>) for the compile-time dtype D = d that a row of VEC
// elements per 16 bytes can have (bf16 or f16 for 8, f32 for 4); false when d is none of them.
template <int VEC, class Fn>
bool with_streamed_dtype(int d, Fn&& fn) {
  constexpr int kBf16 = static_cast<int>(DType::BF16), kF16 = static_cast<int>(DType::F16),
                kF32 = static_cast<int>(DType::F32);
  if constexpr (VEC == 8) {
    if (d == kBf16) return fn(std::integral_constant<int, kBf16>{}), true;
    if (d == kF16) return fn(std::integral_constant<int, kF16>{}), true;
  } else {
    if (d == kF32) return fn(std::integral_constant<int, kF32>{}), true;
  }
  return false;
}

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
  kernel<<<grid, l.threads, shared, stream_of(stream)>>>(a, ring);
}

// Streams the rows through a ring with the compile-time dtype D when they can be, else reads
// them directly (kMixed).
template <int VEC, int CPT, int D, bool LAYER>
void forward_streamed_or_not(const NormForwardArgs& a, const NormLayout& l, RingLayout stage,
                             int device, int sm_margin, void* stream) {
  // The block's copy of beta where this instantiation reads it (kForwardBetaShared).
  if (kForwardBetaShared<VEC, D, LAYER> && a.bias != nullptr)
    stage.parameter_bytes = parameter_copy_bytes(a.hidden, VEC);
  const RingLayout ring = with_stages(
      stage, reinterpret_cast<const void*>(norm_forward_kernel<VEC, CPT, D, LAYER>), l.threads, device);
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

namespace {

// Calls fn(std::integral_constant<int, VEC>, std::integral_constant<int, CPT>) for the register
// layouts the kernels are instantiated for: 16-bit rows (VEC 8) 1, 2, 4 chunks a thread (and 8
// when kWide8: the forward's 64 elements), fp32 rows (VEC 4) 1, 2, 4, 8.
template <bool kWide8, class Fn>
void with_layout(const NormLayout& layout, const char* kernel, Fn&& fn) {
  using std::integral_constant;
  switch (layout.vec * 16 + layout.chunks_per_thread) {
    case 8 * 16 + 1: return fn(integral_constant<int, 8>{}, integral_constant<int, 1>{});
    case 8 * 16 + 2: return fn(integral_constant<int, 8>{}, integral_constant<int, 2>{});
    case 8 * 16 + 4: return fn(integral_constant<int, 8>{}, integral_constant<int, 4>{});
    case 8 * 16 + 8:
      if constexpr (kWide8) return fn(integral_constant<int, 8>{}, integral_constant<int, 8>{});
      break;
    case 4 * 16 + 1: return fn(integral_constant<int, 4>{}, integral_constant<int, 1>{});
    case 4 * 16 + 2: return fn(integral_constant<int, 4>{}, integral_constant<int, 2>{});
    case 4 * 16 + 4: return fn(integral_constant<int, 4>{}, integral_constant<int, 4>{});
    case 4 * 16 + 8: return fn(integral_constant<int, 4>{}, integral_constant<int, 8>{});
    default: break;
  }
  sy::fail(SY_ERR_INTERNAL, std::string("te: no ") + kernel + " for " + std::to_string(layout.vec) +
                                " x " + std::to_string(layout.chunks_per_thread) +
                                " elements per thread");
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
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  check_cuda(cudaLaunchKernelEx(&config, norm_finalize_kernel, a),
             "cudaLaunchKernelEx(norm_finalize_kernel)");
}

}  // namespace switchyard::te
