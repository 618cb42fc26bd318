// What te's normalization kernels share on the device (norm_forward.cu, norm_backward.cu): a
// row's chunks loaded and stored in each dtype or held as raw bits, the ring of shared-memory
// stages that bulk copies fill ahead of the rows' use, the cursors over a block's rows, and
// gamma_eff's forms. Included by .cu files only.
#ifndef SWITCHYARD_TE_NORM_DEVICE_CUH
#define SWITCHYARD_TE_NORM_DEVICE_CUH

#include "kernel_args.hpp"
#include "stage_ring.cuh"
#include "te_device.cuh"

#include <switchyard/cuda/bulk_copy.cuh>

#include <cstdint>
#include <type_traits>

namespace switchyard::te {

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

// ---- a row's chunks as raw bits -----------------------------------------------------------------

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
// backward 0.2290 -> 0.2108 ms (3 ahead since, norm_backward.cu's kSplitRowsAhead). Otherwise early.stages = 0 and `late` holds every streamed
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
  // Per stage, the row it holds (-1: none, the block's rows are done); NULL: not recorded, the
  // readers know their rows.
  int64_t* stage_rows = nullptr;

  __device__ Ring(const RingLayout& l, unsigned char* memory, uint64_t* full,
                  int64_t* rows_of_stages = nullptr)
      : layout(l), stages{memory, full, nullptr, l.stages, l.stage_bytes}, stage_rows(rows_of_stages) {}

  // The row the stage at `at` holds, once wait(at) returned (recorded rings only).
  __device__ int64_t row_at(const StagePosition& at) const { return stage_rows[at.index()]; }

  // Thread 0 only: copies row `row` of every streamed tensor into the stage at `at`.
  __device__ void fill(const StagePosition& at, int64_t row, const RingSources& src) const {
    // Written before the barrier's arrival (a release): its waiters see it.
    if (stage_rows != nullptr) stage_rows[at.index()] = row;
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
    if (threadIdx.x == 0) {
      uint32_t i = 0;
      for (; i < layout.stages && next.row >= 0; ++i, next.advance()) {
        fill(filled, next.row, src);
        filled.advance(layout.stages);
      }
      if (i < layout.stages) mark_end(next, filled);
    }
  }

  // Thread 0 only, a recorded ring whose cursor is past the block's last row (-1): the stage at
  // `filled` completes at once holding row -1, which ends the readers' loop; then -2, so that
  // this happens once.
  template <class Cursor>
  __device__ void mark_end(Cursor& next, const StagePosition& filled) const {
    if (stage_rows == nullptr || next.row != -1) return;
    stage_rows[filled.index()] = -1;
    stages.arm(filled, 0);
    next.row = -2;
  }

  // Thread 0 only, after a barrier that ends every thread's reads of the stage at `filled`
  // (the iteration `stages` before it): the stage takes the block's next row, if it has one.
  template <class Cursor>
  __device__ void refill(Cursor& next, StagePosition& filled, const RingSources& src) const {
    if (next.row < 0) return mark_end(next, filled);
    cuda::bulk_reuse_fence();
    fill(filled, next.row, src);
    filled.advance(layout.stages);
    next.advance();
  }
};

// The forward's streamed rows of a block (thread 0's): its first `stages` rows by stride
// (blockIdx.x, + gridDim.x, ...), then rows claimed from a.row_claims (row_claims.hpp; NULL: by
// stride throughout) as the block frees up, so that the grid's faster multiprocessors take more
// rows; row = -1 past the last. Each claim is made one row ahead, so that its round trip to L2
// overlaps a row's work. The cursor lives in shared memory (State) but for the claim in flight:
// every thread of the block would hold its registers, and the forward has none to spare.
struct ClaimCursor {
  // A 32-bit claim on the counter's low word (the zeroing kernel clears all 64 bits), whose
  // result lands in the register `claimed` lives in. A 64-bit atomic's result can land in a
  // scratch pair that the compiler moves at once into `claimed`: thread 0, and with it the block
  // at its next barrier, then waits for the claim's round trip every row (the SASS of a
  // LayerNorm forward claiming its rows: IMAD.MOV after each ATOMG, 5.7 us at 4096 against 0.5
  // with this claim; eighteenth session).
  static __device__ __forceinline__ uint32_t claim(unsigned long long* counter) {
    return atomicAdd(reinterpret_cast<unsigned int*>(counter), 1u);
  }
  struct State {
    int64_t row, first_claimed;
    uint32_t static_left;  // rows still to take by stride before claiming
  };
  const NormForwardArgs& a;
  State& s;
  int64_t& row;
  uint32_t claimed = 0;  // the claim in flight: rows past first_claimed (the plan claims only
                         // up to kNormMaxClaimedRows rows, so the count never wraps)

  // Thread 0's; the others construct it and never use it.
  __device__ ClaimCursor(const NormForwardArgs& args, uint32_t stages, State& state)
      : a(args), s(state), row(state.row) {
    if (threadIdx.x != 0) return;
    s.row = static_cast<int64_t>(blockIdx.x) < a.rows ? static_cast<int64_t>(blockIdx.x) : -1;
    s.first_claimed = static_cast<int64_t>(stages) * gridDim.x;
    s.static_left = stages - 1;
    if (a.row_claims != nullptr && s.first_claimed < a.rows) {
      wait_for_previous_grid();  // the counter's zeroing (row_claims.hpp)
      claimed = claim(a.row_claims);
    }
  }
  __device__ void advance() {
    if (row < 0) return;
    if (s.static_left > 0 || a.row_claims == nullptr) {
      if (s.static_left > 0) --s.static_left;
      row += gridDim.x;
      if (row >= a.rows) row = -1;
      return;
    }
    row = s.first_claimed + claimed;
    if (row >= a.rows) row = -1;
    else claimed = claim(a.row_claims);
  }
};

// The forward's rows of a block by stride alone: blockIdx.x, + gridDim.x, ...; row = -1 past the
// last. In registers: the LayerNorm forward, whose rows are not claimed, measured faster so.
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

// Which rows chunk c of the dgamma/dbeta partition holds (NormPlan: chunk_count chunks of at
// most rows_per_chunk rows). STRIDED: rows c, c + chunk_count, c + 2·chunk_count, ..., so that
// the grid's blocks move through the tensors together; else the rows_per_chunk consecutive
// rows from c·rows_per_chunk. The kernel's register layout fixes the form (kStridedChunks), so
// a problem's dgamma bits do not depend on whether its rows are streamed.
template <bool STRIDED>
struct ChunkRows {
  __device__ static int64_t first(const NormBackwardArgs& a, int64_t chunk) {
    return STRIDED ? chunk : chunk * a.rows_per_chunk;
  }
  __device__ static int64_t step(const NormBackwardArgs& a) { return STRIDED ? a.chunk_count : 1; }
  __device__ static int64_t end(const NormBackwardArgs& a, int64_t first) {
    if (STRIDED) return a.rows;
    return first + a.rows_per_chunk < a.rows ? first + a.rows_per_chunk : a.rows;
  }
};

// Strided chunks for 16-bit rows at 32 elements a thread (H in (1024, 16384] but the 512-thread
// layout of (7680, 8192]). Same lease, bf16 [16384, H] backward, strided against consecutive
// rows (ms): RMS 2048 0.0747 -> 0.0717, 3072 0.0910 -> 0.0863, 4096 0.1141 -> 0.1112, 5120
// 0.1459 -> 0.1405; LayerNorm 4096 0.1208 -> 0.1171, 5120 0.1611 -> 0.1442, but 2048 0.0806 ->
// 0.0819 and 3072 0.0950 -> 0.0988. Not elsewhere: at 16 elements a thread (split rings) LayerNorm
// 8192 went 0.2293 -> 0.2428, fp32 RMS 4096 0.566 -> 0.807; 1024 (one chunk a thread) the same.
template <int VEC, int CPT>
constexpr bool kStridedChunks = VEC == 8 && CPT == 4;

// The backward's rows of a block: its chunks blockIdx.x, + gridDim.x, ..., each chunk's rows in
// order (no division per row); row = -1 past the last. The partition's sizes stay in the
// kernel's parameters (`a`), not in registers: thread 0 keeps two cursors with split rings.
template <bool STRIDED>
struct ChunkCursor {
  using Rows = ChunkRows<STRIDED>;
  const NormBackwardArgs& a;
  int64_t chunk, end = 0, row = -1;
  __device__ explicit ChunkCursor(const NormBackwardArgs& args) : a(args), chunk(blockIdx.x) { enter(); }
  __device__ void enter() {
    if (chunk >= a.chunk_count) {
      row = -1;
      return;
    }
    row = Rows::first(a, chunk);
    end = Rows::end(a, row);
  }
  __device__ void advance() {
    if (row < 0) return;
    row += Rows::step(a);
    if (row < end) return;
    chunk += gridDim.x;
    enter();
  }
};

__device__ __forceinline__ int64_t first_column(int thread, int c) {
  return (static_cast<int64_t>(thread) + static_cast<int64_t>(c) * blockDim.x);
}

// ---- gamma_eff ------------------------------------------------------------------------------------

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

// gamma_eff of a chunk kept in registers as raw bits of x's dtype, in form G.
template <int G, int VEC>
__device__ __forceinline__ void gamma_of(const RawChunk& raw, bool bf16, float (&gamma)[VEC]) {
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    gamma[e] = G == kGammaOne ? 1.0f : raw_get<VEC>(raw, e, bf16);
    if constexpr (G == kGammaPlusOne) gamma[e] += 1.0f;
  }
}

}  // namespace switchyard::te

#endif
