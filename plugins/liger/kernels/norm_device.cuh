// The norm kernels (launches are in norm_kernels.cu).
//
// Liger-Kernel's LayerNorm / RMSNorm row kernels as CUDA C++ (plus L2Norm, RMSNorm without
// gamma).
//
// Forward: one block per row. Pass 1 reads x (and residual: h = x + residual rounded to x's
// dtype, written to residual_out) and sums h (LayerNorm) or h^2; LayerNorm's second pass sums
// (h - mean)^2 (two-pass variance, as Liger); the last pass writes y. Later passes re-read h from
// x or residual_out (the row was just read: L1/L2 hits), so any hidden size works without
// per-size kernels and x, residual or residual_out may alias as the ABI allows.
//
// Backward: Liger's scheme of per-program partial dgamma/dbeta, made deterministic: block b
// owns the fixed rows [32 b, 32 b + 32) and walks them in order, keeping its column sums in
// shared memory; a second kernel adds the blocks' sums column by column in block order. dx may
// be dy, x_or_y or d_residual_out itself: each element is read and then written by one thread.
#ifndef SWITCHYARD_LIGER_KERNELS_NORM_DEVICE_CUH
#define SWITCHYARD_LIGER_KERNELS_NORM_DEVICE_CUH

#include "device_io.cuh"

#include <cstdint>

namespace switchyard::liger {
// Internal linkage: exactly one translation unit per binary includes this (norm_kernels.cu, or
// the tests' emulator).
namespace {

using namespace device;

constexpr int kFinalizeThreads = 256;

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

// ---- forward --------------------------------------------------------------------------------

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
__device__ __forceinline__ void forward_row(const NormForwardArgs& a, float* scratch) {
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

__global__ void __launch_bounds__(kMaxRowThreads, kMinRowBlocks) forward_kernel(NormForwardArgs a) {
  SY_LIGER_SHARED float scratch[32];
  if (a.aligned)
    forward_row<true>(a, scratch);
  else
    forward_row<false>(a, scratch);
}

// ---- backward -------------------------------------------------------------------------------

// One chunk's inputs to the backward: dy, x-hat and gamma_eff.
struct BackwardChunk {
  float dy[kChunk];
  float x_hat[kChunk];
  float gamma[kChunk];
};

template <bool kAligned>
__device__ __forceinline__ void load_backward_chunk(const NormBackwardArgs& a, int64_t row,
                                                    int64_t column, int n, float rstd,
                                                    float mean, BackwardChunk& out) {
  const bool layer = a.kind == NormKind::Layer;
  float xy[kChunk], b[kChunk];
  load_chunk<kAligned>(a.dy, a.y_dt, row * a.dy_stride + column, n, out.dy);
  load_chunk<kAligned>(a.x_or_y, a.x_or_y_dt, row * a.x_or_y_stride + column, n, xy);
  if (a.weight != nullptr) {
    load_chunk<kAligned>(a.weight, a.w_dt, column, n, out.gamma);
#pragma unroll
    for (int k = 0; k < kChunk; ++k)
      if (a.zero_centered) out.gamma[k] = add_rn(1.0f, out.gamma[k]);
  } else {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) out.gamma[k] = 1.0f;  // L2Norm
  }
  const bool with_bias = layer && a.memory_efficient && a.bias != nullptr;
  if (with_bias) load_chunk<kAligned>(a.bias, a.w_dt, column, n, b);
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
__device__ __forceinline__ void backward_rows(const NormBackwardArgs& a, float* sums_smem,
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
    backward_kernel(NormBackwardArgs a) {
  float* sums_smem = static_cast<float*>(dynamic_shared());
  SY_LIGER_SHARED float scratch[64];
  if (a.aligned)
    backward_rows<true>(a, sums_smem, scratch);
  else
    backward_rows<false>(a, sums_smem, scratch);
}

__global__ void weight_grad_kernel(const float* partial, int64_t blocks, int64_t hidden,
                                   void* out, Dt out_dt, bool accumulate) {
  const int64_t j = block_x() * static_cast<int64_t>(block_dim()) + thread_x();
  if (j >= hidden) return;
  float sum = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) sum = add_rn(sum, partial[b * hidden + j]);
  if (accumulate) {
    float* target = static_cast<float*>(out) + j;
    *target = add_rn(*target, sum);
  } else {
    store1(out, out_dt, j, sum);
  }
}

// ---- dispatch -------------------------------------------------------------------------------
// `launch(grid, threads, shared_bytes, kernel, args...)`, as for cross entropy.

template <class Launch>
void dispatch_norm_forward(Launch&& launch, const NormForwardArgs& a) {
  launch(static_cast<unsigned>(a.rows), a.threads, 0, forward_kernel, a);
}

template <class Launch>
void dispatch_norm_backward(Launch&& launch, const NormBackwardArgs& a) {
  const int64_t shared = norm_backward_shared_bytes(a.hidden, a.dweight_partial != nullptr,
                                                    a.dbias_partial != nullptr);
  launch(static_cast<unsigned>(norm_backward_blocks(a.rows)), a.threads,
         static_cast<size_t>(shared), backward_kernel, a);
}

template <class Launch>
void dispatch_norm_weight_grad(Launch&& launch, const float* partial, int64_t blocks,
                               int64_t hidden, void* out, Dt out_dt, bool accumulate) {
  const int64_t grid = (hidden + kFinalizeThreads - 1) / kFinalizeThreads;
  launch(static_cast<unsigned>(grid), kFinalizeThreads, 0, weight_grad_kernel, partial, blocks,
         hidden, out, out_dt, accumulate);
}

}  // namespace
}  // namespace switchyard::liger

#endif
