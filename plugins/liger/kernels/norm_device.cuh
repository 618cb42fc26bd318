// The norm kernels (launches are in norm_kernels.cu, geometry in norm_geometry.hpp).
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
// Backward: Liger's per-program partial dgamma/dbeta, made deterministic: block b owns the fixed
// rows [32 b, 32 b + 32) and walks them in order. Register path (H <= 8192): one or two chunks
// per thread (at most 512 threads, 128 registers), x_or_y and dy read once per row (the next row's loads are issued before this row's
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

// ---- forward, register path -------------------------------------------------------------------

// The row in registers: chunk k of this thread is chunk thread_x() + k * blockDim of the row
// (a warp moves contiguous 512-byte runs); chunks past the row have length 0 and are never
// accessed.
template <int K, bool kAligned, int kWords>
__device__ __forceinline__ void forward_row_registers(const NormForwardArgs& a, float* scratch) {
  const int64_t row = block_x();
  const int64_t hidden = a.hidden;
  const int64_t chunks = norm_chunks(hidden);
  const int64_t threads = block_dim();
  const bool layer = a.kind == NormKind::Layer;
  const bool residual = a.residual != nullptr;
  const float h_count = static_cast<float>(hidden);

  int n[K];
  int64_t column[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t c = thread_x() + k * threads;
    n[k] = c < chunks ? chunk_length(hidden, c) : 0;
    column[k] = c * kChunk;
  }
  RawChunk<kWords> x_raw[K], residual_raw[K];
#pragma unroll
  for (int k = 0; k < K; ++k)
    load_raw<kAligned>(a.x, a.x_dt, row * a.x_stride + column[k], n[k], x_raw[k]);
  if (residual) {
#pragma unroll
    for (int k = 0; k < K; ++k)
      load_raw<kAligned>(a.residual, a.x_dt, row * a.residual_stride + column[k], n[k],
                         residual_raw[k]);
  }
  float h[K][kChunk];
#pragma unroll
  for (int k = 0; k < K; ++k) raw_to_float(a.x_dt, x_raw[k], h[k]);
  if (residual) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float r[kChunk];
      raw_to_float(a.x_dt, residual_raw[k], r);
#pragma unroll
      for (int e = 0; e < kChunk; ++e) h[k][e] = add_rn(h[k][e], r[e]);
      round_chunk(a.x_dt, h[k]);
      store_chunk<kAligned>(a.residual_out, a.x_dt, row * a.residual_out_stride + column[k], n[k],
                            h[k]);
    }
  }

  float sum[1] = {0.0f};  // LayerNorm: sum h; RMS/L2: sum h^2
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int e = 0; e < kChunk; ++e)
      if (e < n[k]) sum[0] = layer ? add_rn(sum[0], h[k][e]) : fma_rn(h[k][e], h[k][e], sum[0]);
  block_sum<1>(sum, scratch);

  float mean = 0.0f;
  float rstd;
  if (layer) {
    mean = div_rn(sum[0], h_count);
    float squares[1] = {0.0f};
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        const float d = sub_rn(h[k][e], mean);
        if (e < n[k]) squares[0] = fma_rn(d, d, squares[0]);
      }
    block_sum<1>(squares, scratch);
    rstd = div_rn(1.0f, sqrt_rn(add_rn(div_rn(squares[0], h_count), a.eps)));
  } else {
    rstd = div_rn(1.0f, sqrt_rn(add_rn(div_rn(sum[0], h_count), a.eps)));
  }

  const bool rms_llama = a.kind == NormKind::Rms && a.llama;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (n[k] == 0) continue;
    float w[kChunk], b[kChunk];
    if (a.weight != nullptr) load_chunk<kAligned>(a.weight, a.w_dt, column[k], n[k], w);
    if (a.bias != nullptr) load_chunk<kAligned>(a.bias, a.w_dt, column[k], n[k], b);
    float x_hat[kChunk];
#pragma unroll
    for (int e = 0; e < kChunk; ++e)
      x_hat[e] = layer ? mul_rn(sub_rn(h[k][e], mean), rstd) : mul_rn(h[k][e], rstd);
    if (rms_llama) round_chunk(a.x_dt, x_hat);
    float y[kChunk];
#pragma unroll
    for (int e = 0; e < kChunk; ++e) {
      if (a.kind == NormKind::L2) {
        y[e] = x_hat[e];
        continue;
      }
      const float gamma = a.zero_centered ? add_rn(1.0f, w[e]) : w[e];
      y[e] = layer ? fma_rn(x_hat[e], gamma, a.bias != nullptr ? b[e] : 0.0f)
                   : mul_rn(x_hat[e], gamma);
    }
    store_chunk<kAligned>(a.y, a.y_dt, row * a.y_stride + column[k], n[k], y);
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
  if (a.aligned)
    forward_row_registers<K, true, kWords>(a, scratch);
  else
    forward_row_registers<K, false, kWords>(a, scratch);
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

// One chunk's inputs to the backward: dy, x-hat and gamma_eff.
struct BackwardChunk {
  float dy[kChunk];
  float x_hat[kChunk];
  float gamma[kChunk];
};

// The backward's dtypes: kFixed = BF16 / F16 when every row and weight tensor has that dtype
// (compile-time: no dtype switches, which otherwise cost the register path ~50 registers);
// kFixed = F32 means "read them from the arguments".
template <Dt kFixed>
__device__ __forceinline__ Dt pick(Dt runtime) {
  return kFixed == Dt::F32 ? runtime : kFixed;
}

// gamma_eff and x-hat of a chunk whose x_or_y values are `xy` (dy already in out.dy).
template <bool kAligned, Dt kFixed = Dt::F32>
__device__ __forceinline__ void finish_backward_chunk(const NormBackwardArgs& a, int64_t column,
                                                      int n, float rstd, float mean,
                                                      const float (&xy)[kChunk],
                                                      BackwardChunk& out) {
  const bool layer = a.kind == NormKind::Layer;
  float b[kChunk] = {};  // read only with a bias; zeroed for g++ -Wmaybe-uninitialized
  if (a.weight != nullptr) {
    load_chunk<kAligned>(a.weight, pick<kFixed>(a.w_dt), column, n, out.gamma);
#pragma unroll
    for (int k = 0; k < kChunk; ++k)
      if (a.zero_centered) out.gamma[k] = add_rn(1.0f, out.gamma[k]);
  } else {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) out.gamma[k] = 1.0f;  // L2Norm
  }
  const bool with_bias = layer && a.memory_efficient && a.bias != nullptr;
  if (with_bias) load_chunk<kAligned>(a.bias, pick<kFixed>(a.w_dt), column, n, b);
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    if (a.memory_efficient) {
      // x-hat from y: (y - beta) / gamma_eff, y / gamma_eff, or y itself (L2).
      const float shifted = with_bias ? sub_rn(xy[k], b[k]) : xy[k];
      out.x_hat[k] = a.kind == NormKind::L2 ? xy[k] : div_rn(shifted, out.gamma[k]);
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

template <bool kAligned, int kWords, Dt kFixed>
__device__ __forceinline__ void backward_values(const NormBackwardArgs& a, int64_t column, int n,
                                                float rstd, float mean,
                                                const RawChunk<kWords>& dy_raw,
                                                const RawChunk<kWords>& xy_raw,
                                                BackwardChunk& out) {
  float xy[kChunk];
  raw_to_float(pick<kFixed>(a.y_dt), dy_raw, out.dy);
  raw_to_float(pick<kFixed>(a.x_or_y_dt), xy_raw, xy);
  finish_backward_chunk<kAligned, kFixed>(a, column, n, rstd, mean, xy, out);
}

// Thread t owns chunks t + k * blockDim (k < K) of every row of the block's 32; its
// dgamma/dbeta column sums stay in registers. Each row's dy and x_or_y are read once: the next
// row's loads (and its rstd/mean) are issued before this row's reduction, so two rows per block
// are in flight. The thread's partial sums add its chunks in k order (fixed by H).
template <bool kAligned, int kWords, Dt kFixed, int K>
__device__ __forceinline__ void backward_rows_registers(const NormBackwardArgs& a,
                                                        float* scratch) {
  const int64_t hidden = a.hidden;
  const int64_t chunks = norm_chunks(hidden);
  int n[K];
  int64_t column[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t chunk = thread_x() + static_cast<int64_t>(k) * block_dim();
    n[k] = chunk < chunks ? chunk_length(hidden, chunk) : 0;
    column[k] = chunk * kChunk;
  }
  const bool layer = a.kind == NormKind::Layer;
  const bool rms_llama = a.kind == NormKind::Rms && a.llama;
  const bool with_mean = layer && !a.memory_efficient;
  const float h_count = static_cast<float>(hidden);

  float dgamma[K][kChunk], dbeta[K][kChunk];
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int e = 0; e < kChunk; ++e) dgamma[k][e] = dbeta[k][e] = 0.0f;

  const int64_t first = static_cast<int64_t>(block_x()) * kNormRowsPerBlock;
  const int64_t last = first + kNormRowsPerBlock < a.rows ? first + kNormRowsPerBlock : a.rows;
  RawChunk<kWords> next_dy[K], next_xy[K];
  float next_rstd = 0.0f, next_mean = 0.0f;
  auto prefetch = [&](int64_t row) {
#pragma unroll
    for (int k = 0; k < K; ++k)
      load_raw<kAligned>(a.dy, pick<kFixed>(a.y_dt), row * a.dy_stride + column[k], n[k],
                         next_dy[k]);
#pragma unroll
    for (int k = 0; k < K; ++k)
      load_raw<kAligned>(a.x_or_y, pick<kFixed>(a.x_or_y_dt), row * a.x_or_y_stride + column[k],
                         n[k], next_xy[k]);
    next_rstd = a.rstd[row];
    next_mean = with_mean ? a.mean[row] : 0.0f;
  };
  prefetch(first);
  for (int64_t row = first; row < last; ++row) {
    RawChunk<kWords> dy_raw[K], xy_raw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      dy_raw[k] = next_dy[k];
      xy_raw[k] = next_xy[k];
    }
    const float rstd = next_rstd, mean = next_mean;
    if (row + 1 < last) prefetch(row + 1);

    float sums[2] = {0.0f, 0.0f};  // sum gh, sum gh * x-hat
#pragma unroll
    for (int k = 0; k < K; ++k) {
      BackwardChunk in;
      backward_values<kAligned, kWords, kFixed>(a, column[k], n[k], rstd, mean, dy_raw[k],
                                                xy_raw[k], in);
      float x_hat_w[kChunk];  // the x-hat that multiplied gamma in the forward
#pragma unroll
      for (int e = 0; e < kChunk; ++e) x_hat_w[e] = in.x_hat[e];
      if (rms_llama) round_chunk(pick<kFixed>(a.x_dt), x_hat_w);
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        if (e >= n[k]) continue;
        const float gh = mul_rn(in.dy[e], in.gamma[e]);
        sums[0] = add_rn(sums[0], gh);
        sums[1] = fma_rn(gh, in.x_hat[e], sums[1]);
        dgamma[k][e] = fma_rn(in.dy[e], x_hat_w[e], dgamma[k][e]);
        dbeta[k][e] = add_rn(dbeta[k][e], in.dy[e]);
      }
    }
    block_sum<2>(sums, scratch);
    const float mean_gh = layer ? div_rn(sums[0], h_count) : 0.0f;
    const float mean_ghx = div_rn(sums[1], h_count);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float extra[kChunk] = {};
      if (a.d_residual_out != nullptr)
        load_chunk<kAligned>(a.d_residual_out, pick<kFixed>(a.x_dt),
                             row * a.d_residual_out_stride + column[k], n[k], extra);
      // gh and x-hat again from the raw row (gamma from L1): fewer registers live across the
      // reduction than keeping 16 floats a chunk.
      BackwardChunk in;
      backward_values<kAligned, kWords, kFixed>(a, column[k], n[k], rstd, mean, dy_raw[k],
                                                xy_raw[k], in);
      float dx[kChunk];
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        const float gh = mul_rn(in.dy[e], in.gamma[e]);
        const float inner = sub_rn(sub_rn(gh, mean_gh), mul_rn(in.x_hat[e], mean_ghx));
        dx[e] = mul_rn(rstd, inner);
        if (a.d_residual_out != nullptr) dx[e] = add_rn(dx[e], extra[e]);
      }
      store_chunk<kAligned>(a.dx, pick<kFixed>(a.x_dt), row * a.dx_stride + column[k], n[k], dx);
    }
  }

#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t out = static_cast<int64_t>(block_x()) * hidden + column[k];
#pragma unroll
    for (int e = 0; e < kChunk; ++e) {
      if (e >= n[k]) continue;
      if (a.dweight_partial != nullptr) a.dweight_partial[out + e] = dgamma[k][e];
      if (a.dbias_partial != nullptr) a.dbias_partial[out + e] = dbeta[k][e];
    }
  }
}

// kFixed: BF16 / F16 (every tensor of that dtype, 4-word raw chunks) or F32 (any dtypes, read
// at run time, 8-word raw chunks). K: chunks a thread, 1 (H <= 4096) or 2 (H <= 8192); blocks
// of at most kNormBackwardMaxThreads = 512 threads may use 128 registers (one block per SM).
template <Dt kFixed, int K>
__global__ void __launch_bounds__(kNormBackwardMaxThreads, 1)
    backward_register_kernel(NormBackwardArgs a) {
  constexpr int kWords = kFixed == Dt::F32 ? 8 : 4;
  SY_LIGER_SHARED float scratch[64];
  if (a.aligned)
    backward_rows_registers<true, kWords, kFixed, K>(a, scratch);
  else
    backward_rows_registers<false, kWords, kFixed, K>(a, scratch);
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

  const int64_t first = static_cast<int64_t>(block_x()) * kNormRowsPerBlock;
  const int64_t last = first + kNormRowsPerBlock < a.rows ? first + kNormRowsPerBlock : a.rows;
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
        const float inner = sub_rn(sub_rn(gh, mean_gh), mul_rn(in.x_hat[e], mean_ghx));
        dx[e] = mul_rn(rstd, inner);
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
#pragma unroll 8
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

// ---- dispatch -------------------------------------------------------------------------------
// `launch(grid, threads, shared_bytes, kernel, args...)`, as for cross entropy. The path follows
// from a.threads (norm_geometry.hpp) and the hidden size only.

// Chunks per thread of the forward; above kNormForwardChunksPerThread the re-reading kernel.
inline int64_t forward_chunks_per_thread(const NormForwardArgs& a) {
  return (norm_chunks(a.hidden) + a.threads - 1) / a.threads;
}

inline bool backward_in_registers(const NormBackwardArgs& a) {
  return a.threads <= kNormBackwardMaxThreads &&
         a.threads * int64_t{kNormBackwardChunksPerThread} >= norm_chunks(a.hidden);
}

// Dynamic shared memory of the backward launch (0 on the register path).
inline int64_t backward_shared_bytes(const NormBackwardArgs& a) {
  if (backward_in_registers(a)) return 0;
  return norm_backward_shared_bytes(a.hidden, a.dweight_partial != nullptr,
                                    a.dbias_partial != nullptr);
}

template <int kWords, class Launch>
void dispatch_norm_forward_registers(Launch&& launch, const NormForwardArgs& a,
                                     int64_t per_thread) {
  const auto rows = static_cast<unsigned>(a.rows);
  if (per_thread <= 1)
    launch(rows, a.threads, 0, forward_register_kernel<1, kWords>, a);
  else if (per_thread <= 2)
    launch(rows, a.threads, 0, forward_register_kernel<2, kWords>, a);
  else
    launch(rows, a.threads, 0, forward_register_kernel<kNormForwardChunksPerThread, kWords>, a);
}

template <class Launch>
void dispatch_norm_forward(Launch&& launch, const NormForwardArgs& a) {
  const int64_t per_thread = forward_chunks_per_thread(a);
  if (per_thread > kNormForwardChunksPerThread)
    launch(static_cast<unsigned>(a.rows), a.threads, 0, forward_reread_kernel, a);
  else if (narrow_dtypes(a.x_dt, a.x_dt))
    dispatch_norm_forward_registers<4>(launch, a, per_thread);
  else
    dispatch_norm_forward_registers<8>(launch, a, per_thread);
}

template <int K, class Launch>
void dispatch_norm_backward_registers(Launch&& launch, const NormBackwardArgs& a,
                                      unsigned blocks) {
  const bool one_dtype = a.y_dt == a.x_or_y_dt && a.y_dt == a.x_dt &&
                         (a.weight == nullptr || a.w_dt == a.x_dt);
  if (one_dtype && a.x_dt == Dt::BF16)
    launch(blocks, a.threads, 0, backward_register_kernel<Dt::BF16, K>, a);
  else if (one_dtype && a.x_dt == Dt::F16)
    launch(blocks, a.threads, 0, backward_register_kernel<Dt::F16, K>, a);
  else
    launch(blocks, a.threads, 0, backward_register_kernel<Dt::F32, K>, a);
}

template <class Launch>
void dispatch_norm_backward(Launch&& launch, const NormBackwardArgs& a) {
  const auto blocks = static_cast<unsigned>(norm_backward_blocks(a.rows));
  if (backward_in_registers(a) && a.threads >= norm_chunks(a.hidden))
    dispatch_norm_backward_registers<1>(launch, a, blocks);
  else if (backward_in_registers(a))
    dispatch_norm_backward_registers<kNormBackwardChunksPerThread>(launch, a, blocks);
  else
    launch(blocks, a.threads, static_cast<size_t>(backward_shared_bytes(a)),
           backward_shared_kernel, a);
}

template <class Launch>
void dispatch_norm_weight_grad(Launch&& launch, const float* partial, int64_t blocks,
                               int64_t hidden, void* out, Dt out_dt, bool accumulate) {
  const int64_t grid = (hidden + kFinalizeColumns - 1) / kFinalizeColumns;
  launch(static_cast<unsigned>(grid), kFinalizeThreads, 0, weight_grad_kernel, partial, blocks,
         hidden, out, out_dt, accumulate);
}

}  // namespace
}  // namespace switchyard::liger

#endif
