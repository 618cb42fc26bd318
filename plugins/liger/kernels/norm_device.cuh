// The norm kernels' row math and the register kernels (the ring kernels, which run the same
// row functions on rows streamed through shared memory, are in norm_ring.cuh; which kernel runs
// is norm_dispatch.cuh; launches are in norm_kernels.cu, geometry in norm_geometry.hpp).
//
// Liger-Kernel's LayerNorm / RMSNorm row kernels as CUDA C++ (plus L2Norm, RMSNorm without
// gamma).
//
// Forward, register path (H <= 16384): one block per row, up to four chunks of the row per
// thread held in registers (Liger's BLOCK_SIZE = whole row). x (and residual: h = x + residual
// rounded to x's dtype, written to residual_out) is read once with every load issued before the
// first use; the sums, LayerNorm's two-pass variance and y come from the registers.
// Forward, re-reading path (wider rows): pass 1 sums, later passes re-read h from x or
// residual_out (L1/L2 hits).
//
// Backward: Liger's per-program partial dgamma/dbeta, made deterministic: the rows are cut into
// fixed blocks of a.rows_per_block rows (32, or 64 where that halves the partial rows at no cost
// in critical path: norm_rows_per_block), each summed in row order into its own partial row.
// Register path (H <= 8192): two chunks per thread (four for LayerNorm rows of one 16-bit dtype;
// one below 33 chunks; at most 512 threads, 128 registers),
// x_or_y and dy read once per row (the next row's loads are issued before this row's
// reduction), dgamma/dbeta summed in registers. Shared-memory path (wider rows): the column sums
// live in shared memory and each row is read twice. A second kernel adds the blocks' sums column
// by column: 16 fixed interleaved lanes of blocks, each in block order, then the lanes in order.
// dx may be dy, x_or_y or d_residual_out itself: each element is read and then written by one
// thread.
#ifndef SWITCHYARD_LIGER_KERNELS_NORM_DEVICE_CUH
#define SWITCHYARD_LIGER_KERNELS_NORM_DEVICE_CUH

#include "device_io.cuh"
#include "norm_geometry.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace switchyard::liger {
// Internal linkage: exactly one translation unit per binary includes this (norm_kernels.cu, or
// the tests' emulator).
namespace {

using namespace device;

// The dgamma/dbeta reduction: a block sums kFinalizeColumns columns (one per lane of a warp, so
// loads are coalesced) over the blocks' partial rows, warp w taking partial rows w, w + 16, ...
constexpr int kFinalizeColumns = 32;
constexpr int kFinalizeLanes = 16;
constexpr int kFinalizeThreads = kFinalizeColumns * kFinalizeLanes;

__device__ __forceinline__ void round_chunk(Dt d, float (&v)[kChunk]) {
  switch (d) {
    case Dt::BF16:
#pragma unroll
      for (int k = 0; k < kChunk; ++k) v[k] = bf16_bits_to_float(float_to_bf16_bits(v[k]));
      return;
    case Dt::F16:
#pragma unroll
      for (int k = 0; k < kChunk; ++k) v[k] = f16_bits_to_float(float_to_f16_bits(v[k]));
      return;
    default: return;
  }
}

__device__ __forceinline__ int chunk_length(int64_t hidden, int64_t chunk) {
  const int64_t left = hidden - chunk * kChunk;
  return left < kChunk ? static_cast<int>(left) : kChunk;
}

// A chunk's raw bits: kWords = 8 holds any dtype (float32: 8 words; 16-bit: 4 packed words, the
// rest 0); kWords = 4 holds only 16-bit dtypes (the common case, half the registers). Loads into
// raw words are issued for every chunk before any is converted, so a thread has all its 16-byte
// loads in flight at once (a conversion right after each load would wait for it).
template <int kWords>
struct RawChunk {
  static_assert(kWords == 4 || kWords == 8, "4 words (16-bit dtypes) or 8 (any dtype)");
  uint32_t w[kWords];
};
// All these dtypes are 16-bit: their raw chunks fit in 4 words.
__host__ __device__ __forceinline__ bool narrow_dtypes(Dt a, Dt b) {
  return a != Dt::F32 && b != Dt::F32;
}

__device__ __forceinline__ float bits_as_float(uint32_t bits) {
#if defined(__CUDACC__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// Elements [index, index + n) of a tensor of dtype d, n <= 8 (0: nothing is read); elements
// past n read as 0. A full, aligned chunk is one or two 16-byte loads.
template <bool kAligned, int kWords>
__device__ __forceinline__ void load_raw(const void* base, Dt d, int64_t index, int n,
                                         RawChunk<kWords>& r) {
  if (kWords == 8 && d == Dt::F32) {
    const uint32_t* p = static_cast<const uint32_t*>(base) + index;
    if (kAligned && n == kChunk) {
      const uint4 lo = reinterpret_cast<const uint4*>(p)[0];
      const uint4 hi = reinterpret_cast<const uint4*>(p)[1];
      r.w[0] = lo.x, r.w[1] = lo.y, r.w[2] = lo.z, r.w[3] = lo.w;
      r.w[kWords - 4] = hi.x, r.w[kWords - 3] = hi.y, r.w[kWords - 2] = hi.z,
                 r.w[kWords - 1] = hi.w;
    } else {
#pragma unroll
      for (int k = 0; k < kWords; ++k) r.w[k] = k < n ? p[k] : 0u;
    }
    return;
  }
  const uint16_t* p = static_cast<const uint16_t*>(base) + index;
  if (kAligned && n == kChunk) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    r.w[0] = v.x, r.w[1] = v.y, r.w[2] = v.z, r.w[3] = v.w;
  } else {
#pragma unroll
    for (int k = 0; k < kChunk / 2; ++k) {
      const uint32_t lo = 2 * k < n ? p[2 * k] : 0u;
      const uint32_t hi = 2 * k + 1 < n ? p[2 * k + 1] : 0u;
      r.w[k] = lo | (hi << 16);
    }
  }
#pragma unroll
  for (int k = kChunk / 2; k < kWords; ++k) r.w[k] = 0u;
}

template <int kWords>
__device__ __forceinline__ void raw_to_float(Dt d, const RawChunk<kWords>& r,
                                             float (&v)[kChunk]) {
  switch (d) {
    case Dt::F32:
      if (kWords == 8) {
#pragma unroll
        for (int k = 0; k < kWords; ++k) v[k] = bits_as_float(r.w[k]);
        return;
      }
      [[fallthrough]];  // unreachable: a 4-word chunk never holds float32
    case Dt::BF16:
#pragma unroll
      for (int k = 0; k < kChunk / 2; ++k) {
        v[2 * k] = bf16_bits_to_float(r.w[k] & 0xffffu);
        v[2 * k + 1] = bf16_bits_to_float(r.w[k] >> 16);
      }
      return;
    default:
#pragma unroll
      for (int k = 0; k < kChunk / 2; ++k) {
        v[2 * k] = f16_bits_to_float(static_cast<uint16_t>(r.w[k] & 0xffffu));
        v[2 * k + 1] = f16_bits_to_float(static_cast<uint16_t>(r.w[k] >> 16));
      }
      return;
  }
}

// ---- what a kernel knows at compile time ----------------------------------------------------

// Run-time values of a NormForm's parameters.
constexpr Dt kRuntimeDt = static_cast<Dt>(-1);
constexpr int kRuntime = -1;

// What a norm kernel's row math may take as known at compile time, so that its inner loops
// branch on nothing per element: kRows, the dtype of every row tensor (forward: x, residual,
// residual_out and y; backward: dy, x_or_y, dx, d_residual_out); kWeights, gamma's and beta's;
// kKind the norm kind; kLlama the casting mode; kWhole: H % 8 == 0, so a thread's chunk is
// whole or absent. kRuntimeDt / kRuntime: read from the arguments. A fixed kind also means
// "not memory-efficient" (those rows take the run-time kernels) and fixes which weight sums are
// accumulated (dbeta for LayerNorm only, dgamma unless L2). The math is the same for every
// form: only the branches and conversions are resolved earlier, so the bits are the same.
// kPlainFlags: the common call's flags fixed too (the ring kernels' plain instantiations): gamma
// present (RMSNorm, LayerNorm), beta present (the LayerNorm forward; the backward reads beta only
// when memory-efficient, which a fixed kind never is), gamma not zero-centred, no residual. Each
// of them is a predicated instruction or a default register per element otherwise.
// kFullChunks: every thread holds all its K chunk slots (chunks = threads x K, e.g. H = 4096 and
// 8192 on the ring kernels), so no chunk is guarded by a branch; the guards cost more than
// their own instructions, since each chunk was a basic block of its own (the compiler could
// neither share address arithmetic between chunks nor overlap one chunk's gamma load with
// another's math).
template <Dt kRows, Dt kWeights, int kKind, int kLlama, bool kWholeChunks,
          bool kPlainFlags = false, bool kFullChunks = false>
struct NormForm {
  static constexpr bool kWhole = kWholeChunks || kFullChunks;
  static constexpr bool kFull = kFullChunks;
  static constexpr bool kFixedKind = kKind != kRuntime;
  __device__ __forceinline__ static Dt rows(Dt d) { return kRows == kRuntimeDt ? d : kRows; }
  __device__ __forceinline__ static Dt weights(Dt d) {
    return kWeights == kRuntimeDt ? d : kWeights;
  }
  __device__ __forceinline__ static NormKind kind(NormKind k) {
    return kKind == kRuntime ? k : static_cast<NormKind>(kKind);
  }
  __device__ __forceinline__ static bool llama(bool l) {
    return kLlama == kRuntime ? l : kLlama != 0;
  }
  __device__ __forceinline__ static bool memory_efficient(bool m) {
    return kKind == kRuntime ? m : false;
  }
  __device__ __forceinline__ static bool with_weight(bool w) {
    return kPlainFlags ? kKind != static_cast<int>(NormKind::L2) : w;
  }
  __device__ __forceinline__ static bool with_bias(bool b) {
    return kPlainFlags ? kKind == static_cast<int>(NormKind::Layer) : b;
  }
  __device__ __forceinline__ static bool zero_centered(bool z) { return kPlainFlags ? false : z; }
  __device__ __forceinline__ static bool residual(bool r) { return kPlainFlags ? false : r; }
  // The run-time forms accumulate both sums (and store those wanted).
  static constexpr bool kDbeta = kKind == kRuntime || kKind == static_cast<int>(NormKind::Layer);
  static constexpr bool kDgamma = kKind == kRuntime || kKind != static_cast<int>(NormKind::L2);
};
using RuntimeForm = NormForm<kRuntimeDt, kRuntimeDt, kRuntime, kRuntime, false>;
// The register backward's "every row tensor of dtype D" kernels.
template <Dt D>
using RowsForm = NormForm<D, kRuntimeDt, kRuntime, kRuntime, false>;
// The ring kernels: one 16-bit dtype for rows and weights, the kind and casting mode fixed
// (kLlama only with RMSNorm), whole chunks; kPlain: the plain flags and full chunks too (the
// common call at the common hidden sizes: one more instantiation per form, not three).
template <Dt D, NormKind kKind, bool kLlama, bool kPlain>
using RingForm = NormForm<D, D, static_cast<int>(kKind), kLlama ? 1 : 0, true, kPlain, kPlain>;

// The elements of a present chunk (n > 0): n, or kChunk when the form knows chunks are whole.
template <class Form>
__device__ __forceinline__ int present_length(int n) {
  return Form::kWhole ? kChunk : n;
}

// ---- forward, register path -------------------------------------------------------------------

// Where row `row` of a matrix with `stride` elements per row starts.
__device__ __forceinline__ const void* row_start(const void* base, Dt d, int64_t row,
                                                 int64_t stride) {
  return static_cast<const unsigned char*>(base) + row * stride * (d == Dt::F32 ? 4 : 2);
}
__device__ __forceinline__ void* row_start(void* base, Dt d, int64_t row, int64_t stride) {
  return static_cast<unsigned char*>(base) + row * stride * (d == Dt::F32 ? 4 : 2);
}

// Called by every thread once a row's first block reduction is complete: the ring kernels
// refill a stage there (the register kernels pass this no-op).
struct NoHook {
  __device__ __forceinline__ void operator()() const {}
};

// v rounded to dtype d, as raw bits (the inverse of raw_to_float; v must already be a value
// of d, so this is exact).
template <int kWords>
__device__ __forceinline__ void float_to_raw(Dt d, const float (&v)[kChunk],
                                             RawChunk<kWords>& r) {
  if (kWords == 8 && d == Dt::F32) {
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
      uint32_t bits;
      std::memcpy(&bits, &v[k], sizeof bits);
      r.w[k] = bits;
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < kChunk / 2; ++k) {
    const uint32_t lo = d == Dt::BF16 ? float_to_bf16_bits(v[2 * k]) : float_to_f16_bits(v[2 * k]);
    const uint32_t hi =
        d == Dt::BF16 ? float_to_bf16_bits(v[2 * k + 1]) : float_to_f16_bits(v[2 * k + 1]);
    r.w[k] = lo | (hi << 16);
  }
}

// Row `row` in registers: chunk k of this thread is chunk thread_x() + k * blockDim of the row
// (a warp moves contiguous 512-byte runs); chunks past the row have length 0 and are never
// accessed. x and residual are read from x_row / residual_row (the row's start in global memory,
// or its copy in a ring stage) before the first reduction, and h is kept as raw words (the
// bits of x's dtype: h is rounded to it) and converted where it is used; everything else is
// addressed in global memory.
// kAlternating: the caller passes one of two 64-float scratch areas, never the same one to two
// consecutive rows; the row's reductions then use scratch[0, 32) and [32, 64) and skip
// block_sum's trailing barrier (consecutive reductions never share an area).
template <class Form, int K, bool kAligned, int kWords, bool kAlternating = false, class Hook>
__device__ __forceinline__ void forward_row(const NormForwardArgs& a, int64_t row,
                                            const void* x_row, const void* residual_row,
                                            float* scratch, const Hook& after_reduction) {
  const int64_t hidden = a.hidden;
  const int64_t chunks = norm_chunks(hidden);
  const int64_t threads = block_dim();
  const NormKind kind = Form::kind(a.kind);
  const bool layer = kind == NormKind::Layer;
  const Dt xd = Form::rows(a.x_dt), yd = Form::rows(a.y_dt), wd = Form::weights(a.w_dt);
  const bool residual = Form::residual(a.residual != nullptr);
  const float h_count = static_cast<float>(hidden);

  int n[K];
  int64_t column[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t c = thread_x() + k * threads;
    n[k] = Form::kFull    ? kChunk
           : c >= chunks  ? 0
           : Form::kWhole ? kChunk
                          : chunk_length(hidden, c);
    column[k] = c * kChunk;
  }
  // Every load is issued before any is used.
  RawChunk<kWords> h_raw[K], residual_raw[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (n[k] == 0) {
#pragma unroll
      for (int w = 0; w < kWords; ++w) h_raw[k].w[w] = residual_raw[k].w[w] = 0u;
      continue;
    }
    load_raw<kAligned>(x_row, xd, column[k], present_length<Form>(n[k]), h_raw[k]);
    if (residual)
      load_raw<kAligned>(residual_row, xd, column[k], present_length<Form>(n[k]),
                         residual_raw[k]);
  }
  if (residual) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (n[k] == 0) continue;
      float h[kChunk], r[kChunk];
      raw_to_float(xd, h_raw[k], h);
      raw_to_float(xd, residual_raw[k], r);
#pragma unroll
      for (int e = 0; e < kChunk; ++e) h[e] = add_rn(h[e], r[e]);
      round_chunk(xd, h);
      store_chunk<kAligned>(a.residual_out, xd, row * a.residual_out_stride + column[k],
                            present_length<Form>(n[k]), h);
      float_to_raw(xd, h, h_raw[k]);
    }
  }

  float sum[1] = {0.0f};  // LayerNorm: sum h; RMS/L2: sum h^2
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (n[k] == 0) continue;
    const int m = present_length<Form>(n[k]);
    float h[kChunk];
    raw_to_float(xd, h_raw[k], h);
#pragma unroll
    for (int e = 0; e < kChunk; ++e)
      if (e < m) sum[0] = layer ? add_rn(sum[0], h[e]) : fma_rn(h[e], h[e], sum[0]);
  }
  block_sum<1, !kAlternating>(sum, scratch);
  after_reduction();

  float mean = 0.0f;
  float rstd;
  if (layer) {
    mean = div_rn(sum[0], h_count);
    float squares[1] = {0.0f};
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (n[k] == 0) continue;
      const int m = present_length<Form>(n[k]);
      float h[kChunk];
      raw_to_float(xd, h_raw[k], h);
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        const float d = sub_rn(h[e], mean);
        if (e < m) squares[0] = fma_rn(d, d, squares[0]);
      }
    }
    block_sum<1, !kAlternating>(squares, kAlternating ? scratch + 32 : scratch);
    rstd = div_rn(1.0f, sqrt_rn(add_rn(div_rn(squares[0], h_count), a.eps)));
  } else {
    rstd = div_rn(1.0f, sqrt_rn(add_rn(div_rn(sum[0], h_count), a.eps)));
  }

  const bool rms_llama = kind == NormKind::Rms && Form::llama(a.llama);
  const bool with_weight = kind != NormKind::L2 && Form::with_weight(a.weight != nullptr);
  const bool with_bias = layer && Form::with_bias(a.bias != nullptr);
  const bool zero_centered = Form::zero_centered(a.zero_centered);
  void* y_row = row_start(a.y, yd, row, a.y_stride);  // once a row, not once a chunk
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (n[k] == 0) continue;
    const int m = present_length<Form>(n[k]);
    float h[kChunk], w[kChunk], b[kChunk];
    raw_to_float(xd, h_raw[k], h);
    if (with_weight) {
      load_chunk<kAligned>(a.weight, wd, column[k], m, w);
      if (zero_centered) {
#pragma unroll
        for (int e = 0; e < kChunk; ++e) w[e] = add_rn(1.0f, w[e]);
      }
    } else {
#pragma unroll
      for (int e = 0; e < kChunk; ++e) w[e] = 1.0f;  // L2 (no gamma): unused
    }
    if (with_bias) {
      load_chunk<kAligned>(a.bias, wd, column[k], m, b);
    } else {
#pragma unroll
      for (int e = 0; e < kChunk; ++e) b[e] = 0.0f;
    }
    float x_hat[kChunk];
#pragma unroll
    for (int e = 0; e < kChunk; ++e)
      x_hat[e] = layer ? mul_rn(sub_rn(h[e], mean), rstd) : mul_rn(h[e], rstd);
    if (rms_llama) round_chunk(xd, x_hat);
    float y[kChunk];
#pragma unroll
    for (int e = 0; e < kChunk; ++e) {
      if (kind == NormKind::L2) {
        y[e] = x_hat[e];
        continue;
      }
      y[e] = layer ? fma_rn(x_hat[e], w[e], b[e]) : mul_rn(x_hat[e], w[e]);
    }
    store_chunk<kAligned>(y_row, yd, column[k], m, y);
  }
  if (thread_x() == 0) {
    a.rstd[row] = rstd;
    if (layer) a.mean[row] = mean;
  }
}

// kWords = 4: x (and so residual, residual_out) is 16-bit. Four chunks a thread need more than
// 64 registers (a 64 cap spills); those blocks are at most 512 threads of which 3-6 still fit an
// SM (H = 8192 / 4096), so the cap is lifted for K = 4 only.
template <int K, int kWords>
__global__ void __launch_bounds__(kMaxRowThreads, K < 4 ? kMinRowBlocks : 1)
    forward_register_kernel(NormForwardArgs a) {
  SY_LIGER_SHARED float scratch[32];
  const int64_t row = block_x();
  const void* x_row = row_start(a.x, a.x_dt, row, a.x_stride);
  const void* residual_row =
      a.residual != nullptr ? row_start(a.residual, a.x_dt, row, a.residual_stride) : nullptr;
  if (a.aligned)
    forward_row<RuntimeForm, K, true, kWords>(a, row, x_row, residual_row, scratch, NoHook{});
  else
    forward_row<RuntimeForm, K, false, kWords>(a, row, x_row, residual_row, scratch, NoHook{});
}

// ---- forward, re-reading path (rows wider than 16384) -------------------------------------------

// h for this chunk: x, or x + residual rounded once to x's dtype (then written to residual_out
// when `first_pass`, and read back from it afterwards).
template <bool kAligned>
__device__ __forceinline__ void load_h(const NormForwardArgs& a, int64_t row, int64_t column,
                                       int n, bool first_pass, float (&h)[kChunk]) {
  if (a.residual == nullptr) {
    load_chunk<kAligned>(a.x, a.x_dt, row * a.x_stride + column, n, h);
    return;
  }
  if (!first_pass) {
    load_chunk<kAligned>(a.residual_out, a.x_dt, row * a.residual_out_stride + column, n, h);
    return;
  }
  float r[kChunk];
  load_chunk<kAligned>(a.x, a.x_dt, row * a.x_stride + column, n, h);
  load_chunk<kAligned>(a.residual, a.x_dt, row * a.residual_stride + column, n, r);
#pragma unroll
  for (int k = 0; k < kChunk; ++k) h[k] = add_rn(h[k], r[k]);
  round_chunk(a.x_dt, h);
  store_chunk<kAligned>(a.residual_out, a.x_dt, row * a.residual_out_stride + column, n, h);
}

template <bool kAligned>
__device__ __forceinline__ void forward_row_reread(const NormForwardArgs& a, float* scratch) {
  const int64_t row = block_x();
  const int64_t hidden = a.hidden;
  const int64_t chunks = (hidden + kChunk - 1) / kChunk;
  const int64_t threads = block_dim();
  const bool layer = a.kind == NormKind::Layer;
  const float h_count = static_cast<float>(hidden);

  float sum[1] = {0.0f};  // LayerNorm: sum h; RMS/L2: sum h^2
  for (int64_t c = thread_x(); c < chunks; c += threads) {
    const int n = chunk_length(hidden, c);
    float h[kChunk];
    load_h<kAligned>(a, row, c * kChunk, n, true, h);
#pragma unroll
    for (int k = 0; k < kChunk; ++k)
      if (k < n) sum[0] = layer ? add_rn(sum[0], h[k]) : fma_rn(h[k], h[k], sum[0]);
  }
  block_sum<1>(sum, scratch);

  float mean = 0.0f;
  float rstd;
  if (layer) {
    mean = div_rn(sum[0], h_count);
    float squares[1] = {0.0f};
    for (int64_t c = thread_x(); c < chunks; c += threads) {
      const int n = chunk_length(hidden, c);
      float h[kChunk];
      load_h<kAligned>(a, row, c * kChunk, n, false, h);
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        const float d = sub_rn(h[k], mean);
        if (k < n) squares[0] = fma_rn(d, d, squares[0]);
      }
    }
    block_sum<1>(squares, scratch);
    rstd = div_rn(1.0f, sqrt_rn(add_rn(div_rn(squares[0], h_count), a.eps)));
  } else {
    rstd = div_rn(1.0f, sqrt_rn(add_rn(div_rn(sum[0], h_count), a.eps)));
  }

  const bool rms_llama = a.kind == NormKind::Rms && a.llama;
  for (int64_t c = thread_x(); c < chunks; c += threads) {
    const int n = chunk_length(hidden, c);
    const int64_t column = c * kChunk;
    float h[kChunk], w[kChunk], b[kChunk];
    load_h<kAligned>(a, row, column, n, false, h);
    if (a.weight != nullptr) load_chunk<kAligned>(a.weight, a.w_dt, column, n, w);
    if (a.bias != nullptr) load_chunk<kAligned>(a.bias, a.w_dt, column, n, b);
    float x_hat[kChunk];
#pragma unroll
    for (int k = 0; k < kChunk; ++k)
      x_hat[k] = layer ? mul_rn(sub_rn(h[k], mean), rstd) : mul_rn(h[k], rstd);
    if (rms_llama) round_chunk(a.x_dt, x_hat);
    float y[kChunk];
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      if (a.kind == NormKind::L2) {
        y[k] = x_hat[k];
        continue;
      }
      const float gamma = a.zero_centered ? add_rn(1.0f, w[k]) : w[k];
      y[k] = layer ? fma_rn(x_hat[k], gamma, a.bias != nullptr ? b[k] : 0.0f)
                   : mul_rn(x_hat[k], gamma);
    }
    store_chunk<kAligned>(a.y, a.y_dt, row * a.y_stride + column, n, y);
  }
  if (thread_x() == 0) {
    a.rstd[row] = rstd;
    if (layer) a.mean[row] = mean;
  }
}

__global__ void __launch_bounds__(kMaxRowThreads, kMinRowBlocks)
    forward_reread_kernel(NormForwardArgs a) {
  SY_LIGER_SHARED float scratch[32];
  if (a.aligned)
    forward_row_reread<true>(a, scratch);
  else
    forward_row_reread<false>(a, scratch);
}

// ---- backward -------------------------------------------------------------------------------

// dx of one element, Liger's (gh - (x_hat * mean(gh x_hat) + mean(gh))) * rstd: the product and
// the sum as one fused multiply-add (mean_gh = 0 for RMSNorm/L2: then an exact product).
__device__ __forceinline__ float dx_of(float gh, float x_hat, float mean_gh, float mean_ghx,
                                       float rstd) {
  return mul_rn(sub_rn(gh, fma_rn(x_hat, mean_ghx, mean_gh)), rstd);
}

// One chunk's inputs to the backward: dy, x-hat and gamma_eff.
struct BackwardChunk {
  float dy[kChunk];
  float x_hat[kChunk];
  float gamma[kChunk];
};

// gamma_eff and x-hat of a chunk of n elements (n > 0) whose x_or_y values are `xy` (dy
// already in out.dy).
template <bool kAligned, class Form = RuntimeForm>
__device__ __forceinline__ void finish_backward_chunk(const NormBackwardArgs& a, int64_t column,
                                                      int n, float rstd, float mean,
                                                      const float (&xy)[kChunk],
                                                      BackwardChunk& out) {
  const NormKind kind = Form::kind(a.kind);
  const bool layer = kind == NormKind::Layer;
  const bool memory_efficient = Form::memory_efficient(a.memory_efficient);
  const Dt wd = Form::weights(a.w_dt);
  float b[kChunk] = {};  // read only with a bias; zeroed for g++ -Wmaybe-uninitialized
  if (kind != NormKind::L2 && Form::with_weight(a.weight != nullptr)) {
    load_chunk<kAligned>(a.weight, wd, column, n, out.gamma);
    if (Form::zero_centered(a.zero_centered)) {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) out.gamma[k] = add_rn(1.0f, out.gamma[k]);
    }
  } else {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) out.gamma[k] = 1.0f;  // L2Norm
  }
  const bool with_bias = layer && memory_efficient && a.bias != nullptr;
  if (with_bias) load_chunk<kAligned>(a.bias, wd, column, n, b);
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    if (memory_efficient) {
      // x-hat from y: (y - beta) / gamma_eff, y / gamma_eff, or y itself (L2).
      const float shifted = with_bias ? sub_rn(xy[k], b[k]) : xy[k];
      out.x_hat[k] = kind == NormKind::L2 ? xy[k] : div_rn(shifted, out.gamma[k]);
    } else {
      out.x_hat[k] = layer ? mul_rn(sub_rn(xy[k], mean), rstd) : mul_rn(xy[k], rstd);
    }
  }
}

template <bool kAligned>
__device__ __forceinline__ void load_backward_chunk(const NormBackwardArgs& a, int64_t row,
                                                    int64_t column, int n, float rstd,
                                                    float mean, BackwardChunk& out) {
  float xy[kChunk];
  load_chunk<kAligned>(a.dy, a.y_dt, row * a.dy_stride + column, n, out.dy);
  load_chunk<kAligned>(a.x_or_y, a.x_or_y_dt, row * a.x_or_y_stride + column, n, xy);
  finish_backward_chunk<kAligned>(a, column, n, rstd, mean, xy, out);
}

// ---- backward, register path (H <= 8192) ----------------------------------------------------

template <class Form, bool kAligned, int kWords>
__device__ __forceinline__ void backward_values(const NormBackwardArgs& a, int64_t column, int n,
                                                float rstd, float mean,
                                                const RawChunk<kWords>& dy_raw,
                                                const RawChunk<kWords>& xy_raw,
                                                BackwardChunk& out) {
  float xy[kChunk];
  raw_to_float(Form::rows(a.y_dt), dy_raw, out.dy);
  raw_to_float(Form::rows(a.x_or_y_dt), xy_raw, xy);
  finish_backward_chunk<kAligned, Form>(a, column, n, rstd, mean, xy, out);
}

// The columns thread t owns on the register and ring backward: chunks t + k * blockDim (k < K),
// n[k] elements of chunk k (0 past the row; kFull: kChunk, known), starting at column[k].
template <int K, bool kFull = false>
struct BackwardColumns {
  int n[K];
  int64_t column[K];
  __device__ __forceinline__ explicit BackwardColumns(int64_t hidden) {
    const int64_t chunks = norm_chunks(hidden);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t chunk = thread_x() + static_cast<int64_t>(k) * block_dim();
      n[k] = kFull ? kChunk : chunk < chunks ? chunk_length(hidden, chunk) : 0;
      column[k] = chunk * kChunk;
    }
  }
};

// A thread's dgamma/dbeta column sums over the rows of one partial (a.rows_per_block rows), in
// row order. Form::kDgamma / kDbeta: which sums are accumulated at all.
template <class Form, int K>
struct WeightSums {
  float dgamma[K][kChunk];
  float dbeta[K][kChunk];
  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
      for (int e = 0; e < kChunk; ++e) dgamma[k][e] = dbeta[k][e] = 0.0f;
  }
  // Into partial row `block` of the workspace (whole chunks: 16-byte stores, the partial rows
  // being 32-byte aligned when H % 8 == 0).
  __device__ __forceinline__ void store(const NormBackwardArgs& a,
                                        const BackwardColumns<K, Form::kFull>& c,
                                        int64_t block) const {
    const bool want_dgamma = Form::kDgamma && a.dweight_partial != nullptr;
    const bool want_dbeta = Form::kDbeta && a.dbias_partial != nullptr;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (c.n[k] == 0) continue;
      const int64_t out = block * a.hidden + c.column[k];
      if constexpr (Form::kWhole) {
#pragma unroll
        for (int e = 0; e < kChunk; e += 4) {
          if (want_dgamma)
            *reinterpret_cast<float4*>(a.dweight_partial + out + e) =
                float4{dgamma[k][e], dgamma[k][e + 1], dgamma[k][e + 2], dgamma[k][e + 3]};
          if (want_dbeta)
            *reinterpret_cast<float4*>(a.dbias_partial + out + e) =
                float4{dbeta[k][e], dbeta[k][e + 1], dbeta[k][e + 2], dbeta[k][e + 3]};
        }
      } else {
#pragma unroll
        for (int e = 0; e < kChunk; ++e) {
          if (e >= c.n[k]) continue;
          if (want_dgamma) a.dweight_partial[out + e] = dgamma[k][e];
          if (want_dbeta) a.dbias_partial[out + e] = dbeta[k][e];
        }
      }
    }
  }
};

// The raw dy / x_or_y chunks of a row held in registers (the register backward's prefetch).
template <int kWords, int K>
struct RegisterChunks {
  const RawChunk<kWords> (&dy)[K];
  const RawChunk<kWords> (&xy)[K];
  __device__ __forceinline__ void operator()(int k, RawChunk<kWords>& dy_out,
                                             RawChunk<kWords>& xy_out) const {
    dy_out = dy[k];
    xy_out = xy[k];
  }
};

// The raw dy / x_or_y chunks of row `row` read from global memory whenever they are wanted (the
// four-chunk register backward). dx over dy or x_or_y stays safe: a thread reads its chunk k
// before it writes dx's chunk k, and no other chunk of its own or another thread's.
template <class Form, bool kAligned, int kWords, int K>
struct GlobalChunks {
  const NormBackwardArgs& a;
  int64_t row;
  const BackwardColumns<K, Form::kFull>& c;
  __device__ __forceinline__ void operator()(int k, RawChunk<kWords>& dy_out,
                                             RawChunk<kWords>& xy_out) const {
    load_raw<kAligned>(a.dy, Form::rows(a.y_dt), row * a.dy_stride + c.column[k], c.n[k],
                       dy_out);
    load_raw<kAligned>(a.x_or_y, Form::rows(a.x_or_y_dt), row * a.x_or_y_stride + c.column[k],
                       c.n[k], xy_out);
  }
};

// One row of the backward: the sums, the block reduction, then dx. chunks(k, dy, xy) gives the
// raw dy / x_or_y of the thread's chunk k (from registers, or re-read from a ring stage: nothing
// of the row then stays in registers across the reduction); d_residual_out is read from
// dres_row (its row in global memory or in a ring stage) and gamma from global memory (L1); dx
// is written to global memory. The thread's partial sums add its chunks in k order (fixed by H).
// kAlternating: as forward_row's (two 64-float areas, alternated row by row by the caller).
template <class Form, bool kAligned, int kWords, int K, bool kAlternating = false, class Chunks,
          class Hook>
__device__ __forceinline__ void backward_row(const NormBackwardArgs& a, int64_t row, float rstd,
                                             float mean, const Chunks& chunks,
                                             const void* dres_row,
                                             const BackwardColumns<K, Form::kFull>& c,
                                             WeightSums<Form, K>& w, float* scratch,
                                             const Hook& after_reduction) {
  const NormKind kind = Form::kind(a.kind);
  const bool layer = kind == NormKind::Layer;
  const bool rms_llama = kind == NormKind::Rms && Form::llama(a.llama);
  const Dt xd = Form::rows(a.x_dt);
  const bool residual = Form::residual(a.d_residual_out != nullptr);
  const float h_count = static_cast<float>(a.hidden);
  float sums[2] = {0.0f, 0.0f};  // sum gh, sum gh * x-hat
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (c.n[k] == 0) continue;
    const int m = present_length<Form>(c.n[k]);
    RawChunk<kWords> dy_raw, xy_raw;
    chunks(k, dy_raw, xy_raw);
    BackwardChunk in;
    backward_values<Form, kAligned, kWords>(a, c.column[k], m, rstd, mean, dy_raw, xy_raw, in);
    float x_hat_w[kChunk];  // the x-hat that multiplied gamma in the forward
#pragma unroll
    for (int e = 0; e < kChunk; ++e) x_hat_w[e] = in.x_hat[e];
    if (rms_llama) round_chunk(xd, x_hat_w);
#pragma unroll
    for (int e = 0; e < kChunk; ++e) {
      if (e >= m) continue;
      const float gh = mul_rn(in.dy[e], in.gamma[e]);
      sums[0] = add_rn(sums[0], gh);
      sums[1] = fma_rn(gh, in.x_hat[e], sums[1]);
      if (Form::kDgamma) w.dgamma[k][e] = fma_rn(in.dy[e], x_hat_w[e], w.dgamma[k][e]);
      if (Form::kDbeta) w.dbeta[k][e] = add_rn(w.dbeta[k][e], in.dy[e]);
    }
  }
  block_sum<2, !kAlternating>(sums, scratch);
  after_reduction();
  const float mean_gh = layer ? div_rn(sums[0], h_count) : 0.0f;
  const float mean_ghx = div_rn(sums[1], h_count);
  void* dx_row = row_start(a.dx, xd, row, a.dx_stride);  // once a row, not once a chunk
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (c.n[k] == 0) continue;
    const int m = present_length<Form>(c.n[k]);
    float extra[kChunk] = {};
    if (residual) load_chunk<kAligned>(dres_row, xd, c.column[k], m, extra);
    // gh and x-hat again from the raw row (gamma from L1): fewer registers live across the
    // reduction than keeping 16 floats a chunk.
    RawChunk<kWords> dy_raw, xy_raw;
    chunks(k, dy_raw, xy_raw);
    BackwardChunk in;
    backward_values<Form, kAligned, kWords>(a, c.column[k], m, rstd, mean, dy_raw, xy_raw, in);
    float dx[kChunk];
#pragma unroll
    for (int e = 0; e < kChunk; ++e) {
      const float gh = mul_rn(in.dy[e], in.gamma[e]);
      dx[e] = dx_of(gh, in.x_hat[e], mean_gh, mean_ghx, rstd);
      if (residual) dx[e] = add_rn(dx[e], extra[e]);
    }
    store_chunk<kAligned>(dx_row, xd, c.column[k], m, dx);
  }
}

// The register backward: block b walks the fixed rows [R b, R b + R) in order (R =
// a.rows_per_block), its dgamma/dbeta column sums in registers. Each row's dy and x_or_y are
// read once: the next row's loads (and its rstd/mean) are issued before this row's reduction,
// so two rows per block are in flight.
template <class Form, bool kAligned, int kWords, int K>
__device__ __forceinline__ void backward_rows_registers(const NormBackwardArgs& a,
                                                        float* scratch) {
  const BackwardColumns<K, Form::kFull> c(a.hidden);
  const bool with_mean = a.kind == NormKind::Layer && !a.memory_efficient;
  WeightSums<Form, K> w;
  w.clear();

  const int64_t first = static_cast<int64_t>(block_x()) * a.rows_per_block;
  const int64_t last = first + a.rows_per_block < a.rows ? first + a.rows_per_block : a.rows;
  RawChunk<kWords> next_dy[K], next_xy[K];
  float next_rstd = 0.0f, next_mean = 0.0f;
  auto prefetch = [&](int64_t row) {
#pragma unroll
    for (int k = 0; k < K; ++k)
      load_raw<kAligned>(a.dy, Form::rows(a.y_dt), row * a.dy_stride + c.column[k], c.n[k],
                         next_dy[k]);
#pragma unroll
    for (int k = 0; k < K; ++k)
      load_raw<kAligned>(a.x_or_y, Form::rows(a.x_or_y_dt),
                         row * a.x_or_y_stride + c.column[k], c.n[k], next_xy[k]);
    next_rstd = a.rstd[row];
    next_mean = with_mean ? a.mean[row] : 0.0f;
  };
  // 8-word (float32-capable) chunks: two rows of them do not fit 128 registers (they spilled
  // ~600 bytes), so those kernels load each row when they reach it. Four chunks (LayerNorm rows
  // of one 16-bit dtype: 64 column sums) do not even keep one row's raw chunks across the
  // reduction (a prefetched row spilled ~1.3 KB, a row held ~600 bytes): they read each chunk
  // from global memory in both passes (the second read hits L1), as the ring kernels re-read
  // their stage.
  constexpr bool kReread = K > kNormBackwardChunksPerThread;
  constexpr bool kPrefetch = kWords == 4 && !kReread;
  if (kPrefetch) prefetch(first);
  for (int64_t row = first; row < last; ++row) {
    const void* dres_row =
        a.d_residual_out != nullptr
            ? row_start(a.d_residual_out, Form::rows(a.x_dt), row, a.d_residual_out_stride)
            : nullptr;
    if constexpr (kReread) {
      const float rstd = a.rstd[row];
      const float mean = with_mean ? a.mean[row] : 0.0f;
      backward_row<Form, kAligned, kWords, K>(a, row, rstd, mean,
                                              GlobalChunks<Form, kAligned, kWords, K>{a, row, c},
                                              dres_row, c, w, scratch, NoHook{});
      continue;
    }
    if (!kPrefetch) prefetch(row);
    RawChunk<kWords> dy_raw[K], xy_raw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      dy_raw[k] = next_dy[k];
      xy_raw[k] = next_xy[k];
    }
    const float rstd = next_rstd, mean = next_mean;
    if (kPrefetch && row + 1 < last) prefetch(row + 1);
    backward_row<Form, kAligned, kWords, K>(a, row, rstd, mean,
                                            RegisterChunks<kWords, K>{dy_raw, xy_raw}, dres_row,
                                            c, w, scratch, NoHook{});
  }
  w.store(a, c, block_x());
}

// The four-chunk register backward's form: LayerNorm (not memory-efficient), every row tensor of
// dtype D, gamma's dtype read at run time, chunks possibly partial (the general form spilled
// ~800 bytes at four chunks).
template <Dt D>
using LayerRowsForm =
    NormForm<D, kRuntimeDt, static_cast<int>(NormKind::Layer), 0, false>;

// kFixed: BF16 / F16 (every row tensor of that dtype, 4-word raw chunks; gamma's dtype read at
// run time) or F32 (any dtypes, read at run time, 8-word raw chunks). K: chunks a thread, 1
// (H <= 4096) or 2 (H <= 8192), or 4 for LayerNorm of BF16 / F16 rows, not memory-efficient
// (norm_backward_four_chunks); blocks of at most kNormBackwardMaxThreads = 512 threads may use
// 128 registers (one block per SM).
template <Dt kFixed, int K>
__global__ void __launch_bounds__(kNormBackwardMaxThreads, 1)
    backward_register_kernel(NormBackwardArgs a) {
  static_assert(K <= kNormBackwardChunksPerThread || kFixed != Dt::F32,
                "four chunks a thread: 16-bit rows only");
  constexpr int kWords = kFixed == Dt::F32 ? 8 : 4;
  using Form = std::conditional_t<
      kFixed == Dt::F32, RuntimeForm,
      std::conditional_t<(K > kNormBackwardChunksPerThread), LayerRowsForm<kFixed>,
                         RowsForm<kFixed>>>;
  SY_LIGER_SHARED float scratch[64];
  if (a.aligned)
    backward_rows_registers<Form, true, kWords, K>(a, scratch);
  else
    backward_rows_registers<Form, false, kWords, K>(a, scratch);
}

// ---- backward, shared-memory path (rows wider than 8192) ------------------------------------

template <bool kAligned>
__device__ __forceinline__ void backward_rows_shared(const NormBackwardArgs& a, float* sums_smem,
                                                     float* scratch) {
  const int64_t hidden = a.hidden;
  const int64_t chunks = (hidden + kChunk - 1) / kChunk;
  const int64_t threads = block_dim();
  const int64_t per_thread = (chunks + threads - 1) / threads;
  const int64_t slots = per_thread * kChunk * threads;
  const int64_t tid = thread_x();
  const bool layer = a.kind == NormKind::Layer;
  const bool rms_llama = a.kind == NormKind::Rms && a.llama;
  const float h_count = static_cast<float>(hidden);
  // This block's column sums, slot (k * 8 + e) * threads + tid for element e of the thread's
  // k-th chunk: each thread touches only its own slots (no barrier, no bank conflicts).
  float* dgamma = a.dweight_partial != nullptr ? sums_smem : nullptr;
  float* dbeta = a.dbias_partial != nullptr ? sums_smem + (dgamma != nullptr ? slots : 0) : nullptr;
  for (int64_t s = tid; s < slots; s += threads) {
    if (dgamma != nullptr) dgamma[s] = 0.0f;
    if (dbeta != nullptr) dbeta[s] = 0.0f;
  }

  const int64_t first = static_cast<int64_t>(block_x()) * a.rows_per_block;
  const int64_t last = first + a.rows_per_block < a.rows ? first + a.rows_per_block : a.rows;
  for (int64_t row = first; row < last; ++row) {
    const float rstd = a.rstd[row];
    const float mean = layer && !a.memory_efficient ? a.mean[row] : 0.0f;
    float sums[2] = {0.0f, 0.0f};  // sum gh, sum gh * x-hat
    for (int64_t k = 0; k < per_thread; ++k) {
      const int64_t c = tid + k * threads;
      if (c >= chunks) break;
      const int n = chunk_length(hidden, c);
      BackwardChunk in;
      load_backward_chunk<kAligned>(a, row, c * kChunk, n, rstd, mean, in);
      float x_hat_w[kChunk];  // the x-hat that multiplied gamma in the forward
#pragma unroll
      for (int e = 0; e < kChunk; ++e) x_hat_w[e] = in.x_hat[e];
      if (rms_llama) round_chunk(a.x_dt, x_hat_w);
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        if (e >= n) continue;
        const float gh = mul_rn(in.dy[e], in.gamma[e]);
        sums[0] = add_rn(sums[0], gh);
        sums[1] = fma_rn(gh, in.x_hat[e], sums[1]);
        const int64_t slot = (k * kChunk + e) * threads + tid;
        if (dgamma != nullptr) dgamma[slot] = fma_rn(in.dy[e], x_hat_w[e], dgamma[slot]);
        if (dbeta != nullptr) dbeta[slot] = add_rn(dbeta[slot], in.dy[e]);
      }
    }
    block_sum<2>(sums, scratch);
    const float mean_gh = layer ? div_rn(sums[0], h_count) : 0.0f;
    const float mean_ghx = div_rn(sums[1], h_count);
    for (int64_t k = 0; k < per_thread; ++k) {
      const int64_t c = tid + k * threads;
      if (c >= chunks) break;
      const int n = chunk_length(hidden, c);
      const int64_t column = c * kChunk;
      BackwardChunk in;
      load_backward_chunk<kAligned>(a, row, column, n, rstd, mean, in);
      float extra[kChunk];
      if (a.d_residual_out != nullptr)
        load_chunk<kAligned>(a.d_residual_out, a.x_dt, row * a.d_residual_out_stride + column, n,
                             extra);
      float dx[kChunk];
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        const float gh = mul_rn(in.dy[e], in.gamma[e]);
        dx[e] = dx_of(gh, in.x_hat[e], mean_gh, mean_ghx, rstd);
        if (a.d_residual_out != nullptr) dx[e] = add_rn(dx[e], extra[e]);
      }
      store_chunk<kAligned>(a.dx, a.x_dt, row * a.dx_stride + column, n, dx);
    }
  }

  const int64_t out = static_cast<int64_t>(block_x()) * hidden;
  for (int64_t k = 0; k < per_thread; ++k) {
    const int64_t c = tid + k * threads;
    if (c >= chunks) break;
#pragma unroll
    for (int e = 0; e < kChunk; ++e) {
      const int64_t column = c * kChunk + e;
      if (column >= hidden) continue;
      const int64_t slot = (k * kChunk + e) * threads + tid;
      if (dgamma != nullptr) a.dweight_partial[out + column] = dgamma[slot];
      if (dbeta != nullptr) a.dbias_partial[out + column] = dbeta[slot];
    }
  }
}

__global__ void __launch_bounds__(kMaxRowThreads, kMinRowBlocks)
    backward_shared_kernel(NormBackwardArgs a) {
  float* sums_smem = static_cast<float*>(dynamic_shared());
  SY_LIGER_SHARED float scratch[64];
  if (a.aligned)
    backward_rows_shared<true>(a, sums_smem, scratch);
  else
    backward_rows_shared<false>(a, sums_smem, scratch);
}

// out[j] (+)= sum over the blocks' partial rows: lane l (a warp) sums partial rows l, l + 16, ...
// in order, then the 16 lane sums are added in lane order. The order depends on the block
// count alone; 16 lanes x 32 columns keep ~1 K loads in flight per block instead of one
// thread walking every partial row (which left the GPU idle on a latency chain).
__global__ void __launch_bounds__(kFinalizeThreads)
    weight_grad_kernel(const float* partial, int64_t blocks, int64_t hidden, void* out,
                       Dt out_dt, bool accumulate) {
  SY_LIGER_SHARED float lane_sums[kFinalizeLanes * kFinalizeColumns];
  const int column_lane = static_cast<int>(thread_x()) % kFinalizeColumns;
  const int lane = static_cast<int>(thread_x()) / kFinalizeColumns;
  const int64_t j = static_cast<int64_t>(block_x()) * kFinalizeColumns + column_lane;
  float sum = 0.0f;
  if (j < hidden) {
    // 16 loads in flight a thread (32 KB a block): N = 16384 gives 512 partial rows, 32 a
    // lane, so two round trips to memory instead of four.
#pragma unroll 16
    for (int64_t b = lane; b < blocks; b += kFinalizeLanes)
      sum = add_rn(sum, partial[b * hidden + j]);
  }
  lane_sums[lane * kFinalizeColumns + column_lane] = sum;
  sync_threads();
  if (lane != 0 || j >= hidden) return;
  float total = lane_sums[column_lane];
  for (int l = 1; l < kFinalizeLanes; ++l)
    total = add_rn(total, lane_sums[l * kFinalizeColumns + column_lane]);
  if (accumulate) {
    float* target = static_cast<float*>(out) + j;
    *target = add_rn(*target, total);
  } else {
    store1(out, out_dt, j, total);
  }
}

}  // namespace
}  // namespace switchyard::liger

#endif
