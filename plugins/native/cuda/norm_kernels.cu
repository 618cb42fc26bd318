// LayerNorm / RMSNorm / L2Norm kernels, torch-style: row statistics reduced in double, element
// math in fp32 (as torch's own kernels), every output rounded once from fp32 to its dtype.
//  - y and dx: one block of norm_row_threads(H) threads per row; thread t owns the chunks
//    t, t + T, ... of the row and keeps the first kNormCachedChunks of them in registers
//    between the passes (wider rows reload the rest). Statistics: the thread's elements in
//    column order, then a fixed tree, so a row's results depend only on that row.
//  - dgamma/dbeta: a partial-sum kernel (a block per 64 rows x 1024 columns, each thread one
//    chunk of columns down the 64 rows in order, 16-byte loads) and a finalize kernel (a warp
//    of adjacent columns per group of partial rows, groups added in a fixed order). No atomics.
#include "chunk_io.cuh"
#include "device_math.cuh"
#include "launch_geometry.cuh"
#include "norm_kernels.hpp"

namespace switchyard::native::cuda {
namespace {

constexpr int kPartialUnroll = 4;  // rows of dy / x_or_y loaded before they are summed
constexpr int kFinalizeThreads = kFinalizeColumns * kFinalizeGroups;

// gamma_eff of chunk c (1 + gamma added in fp32 with zero-centred gamma; 1 without gamma).
__device__ __forceinline__ void load_gamma(const void* gamma, Dtype type, bool vector,
                                           bool zero_centered, int64_t c, int64_t hidden,
                                           float (&g)[kChunk]) {
  if (gamma == nullptr) {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) g[k] = 1.0f;
    return;
  }
  load_chunk(gamma, type, c, hidden, vector, g);
  if (zero_centered) {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) g[k] = 1.0f + g[k];
  }
}

// beta of chunk c (0 without beta).
__device__ __forceinline__ void load_beta(const void* beta, Dtype type, bool vector, int64_t c,
                                          int64_t hidden, float (&b)[kChunk]) {
  if (beta == nullptr) {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) b[k] = 0.0f;
    return;
  }
  load_chunk(beta, type, c, hidden, vector, b);
}

__device__ __forceinline__ bool in_row(int64_t c, int k, int64_t hidden) {
  return c * kChunk + k < hidden;
}

// ---- forward --------------------------------------------------------------------------------

struct ForwardRow {
  const void* x;
  const void* residual;  // NULL without SY_NORM_RESIDUAL
  void* h_out;           // residual_out
  const void* h;         // where h is read back from: residual_out, or x
  bool h_vector;
  void* y;
};

// h = x (+ residual, rounded to x's dtype and stored to residual_out) of chunk c; adds h (or
// h^2) of the row's columns to `first`.
__device__ __forceinline__ void forward_first_pass(const NormForwardArgs& a, const ForwardRow& r,
                                                   int64_t c, bool layer, double& first,
                                                   float (&h)[kChunk]) {
  const Dtype type = a.x.type;
  load_chunk(r.x, type, c, a.hidden, a.x.vector_rows, h);
  if (r.residual != nullptr) {
    float add[kChunk];
    load_chunk(r.residual, type, c, a.hidden, a.residual.vector_rows, add);
#pragma unroll
    for (int k = 0; k < kChunk; ++k) h[k] = round_through(type, h[k] + add[k]);
    store_chunk(r.h_out, type, c, a.hidden, a.residual_out.vector_rows, h);
  }
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    if (!in_row(c, k, a.hidden)) continue;
    const double v = h[k];
    first += layer ? v : v * v;
  }
}

__device__ __forceinline__ void add_squares(const float (&h)[kChunk], int64_t c, int64_t hidden,
                                            double mean, double& squares) {
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    if (!in_row(c, k, hidden)) continue;
    const double d = static_cast<double>(h[k]) - mean;
    squares += d * d;
  }
}

// y = (h - mean) * rstd * gamma_eff + beta of chunk c; mean = mean_hi + mean_lo (the double
// mean to ~2^-48, so h - mean loses nothing to the rounding of the mean).
__device__ __forceinline__ void write_y(const NormForwardArgs& a, const ForwardRow& r,
                                        int64_t c, float mean_hi, float mean_lo, float rstd,
                                        const float (&h)[kChunk]) {
  float g[kChunk], b[kChunk], y[kChunk];
  load_gamma(a.gamma, a.weight_type, a.gamma_vector, a.zero_centered_gamma, c, a.hidden, g);
  load_beta(a.beta, a.weight_type, a.beta_vector, c, a.hidden, b);
#pragma unroll
  for (int k = 0; k < kChunk; ++k) y[k] = fmaf(((h[k] - mean_hi) - mean_lo) * rstd, g[k], b[k]);
  store_chunk(r.y, a.y.type, c, a.hidden, a.y.vector_rows, y);
}

__global__ void __launch_bounds__(kNormMaxThreads) norm_forward_kernel(NormForwardArgs a) {
  __shared__ double partial[kNormMaxThreads / kWarp];
  const int64_t hidden = a.hidden;
  const int64_t chunks = chunks_of(hidden);
  const int64_t threads = blockDim.x;
  const double count = static_cast<double>(hidden);
  const bool layer = a.kind == NormKind::Layer;
  const Dtype type = a.x.type;
  SY_FOR_ROW_BLOCKS(i, a.rows) {
    // Every thread reads and writes only its own chunks, so y may be x and residual_out may be
    // x or residual.
    ForwardRow r{};
    r.x = row_of(a.x.data, type, a.x.row_stride, i);
    r.h = r.x;
    r.h_vector = a.x.vector_rows;
    if (a.residual.data != nullptr) {
      r.residual = row_of(a.residual.data, type, a.residual.row_stride, i);
      r.h_out = row_of(a.residual_out.data, type, a.residual_out.row_stride, i);
      r.h = r.h_out;  // the statistics see exactly the h the caller keeps
      r.h_vector = a.residual_out.vector_rows;
    }
    r.y = row_of(a.y.data, a.y.type, a.y.row_stride, i);

    float h[kNormCachedChunks][kChunk];
    double first = 0.0;
#pragma unroll
    for (int k = 0; k < kNormCachedChunks; ++k) {
      const int64_t c = threadIdx.x + k * threads;
      if (c < chunks) forward_first_pass(a, r, c, layer, first, h[k]);
    }
    for (int64_t c = threadIdx.x + kNormCachedChunks * threads; c < chunks; c += threads) {
      float v[kChunk];
      forward_first_pass(a, r, c, layer, first, v);
    }
    first = block_sum(first, partial);

    double mean = 0.0;
    double rstd = 0.0;
    if (layer) {
      mean = first / count;
      double squares = 0.0;
#pragma unroll
      for (int k = 0; k < kNormCachedChunks; ++k) {
        const int64_t c = threadIdx.x + k * threads;
        if (c < chunks) add_squares(h[k], c, hidden, mean, squares);
      }
      for (int64_t c = threadIdx.x + kNormCachedChunks * threads; c < chunks; c += threads) {
        float v[kChunk];
        load_chunk(r.h, type, c, hidden, r.h_vector, v);
        add_squares(v, c, hidden, mean, squares);
      }
      squares = block_sum(squares, partial);
      rstd = 1.0 / sqrt(squares / count + a.eps);
    } else {
      rstd = 1.0 / sqrt(first / count + a.eps);
    }

    const float mean_hi = static_cast<float>(mean);
    const float mean_lo = static_cast<float>(mean - static_cast<double>(mean_hi));
    const float rstd_f = static_cast<float>(rstd);
#pragma unroll
    for (int k = 0; k < kNormCachedChunks; ++k) {
      const int64_t c = threadIdx.x + k * threads;
      if (c < chunks) write_y(a, r, c, mean_hi, mean_lo, rstd_f, h[k]);
    }
    for (int64_t c = threadIdx.x + kNormCachedChunks * threads; c < chunks; c += threads) {
      float v[kChunk];
      load_chunk(r.h, type, c, hidden, r.h_vector, v);
      write_y(a, r, c, mean_hi, mean_lo, rstd_f, v);
    }
    if (threadIdx.x == 0) {
      if (a.mean != nullptr) a.mean[i] = static_cast<float>(mean);
      a.rstd[i] = rstd_f;
    }
  }
}

// ---- backward: dx -----------------------------------------------------------------------------

// x_hat of chunk c from x_or_y (in place over v): (x - mean) * rstd, or from y with
// MEMORY_EFFICIENT: (y - beta) / gamma_eff (y itself for L2). gamma/beta: chunk c of gamma_eff
// and beta (read only in memory-efficient mode).
__device__ __forceinline__ void x_hat(const NormBackwardArgs& a, float mean, float rstd,
                                      const float (&gamma)[kChunk], const float (&beta)[kChunk],
                                      float (&v)[kChunk]) {
  if (!a.memory_efficient) {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) v[k] = (v[k] - mean) * rstd;
  } else if (a.kind != NormKind::L2) {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) v[k] = __fdiv_rn(v[k] - beta[k], gamma[k]);
  }
}

struct BackwardRow {
  const void* dy;
  const void* src;  // x_or_y
  const void* d_residual;
  void* dx;
  float mean;
  float rstd;
};

// grad_h = dy * gamma_eff and x_hat of chunk c; adds their sums over the row's columns.
__device__ __forceinline__ void backward_first_pass(const NormBackwardArgs& a,
                                                    const BackwardRow& r, int64_t c,
                                                    double& sum_grad, double& sum_grad_xhat,
                                                    float (&grad_h)[kChunk],
                                                    float (&xhat)[kChunk]) {
  float gamma[kChunk], beta[kChunk];
  load_chunk(r.dy, a.dy.type, c, a.hidden, a.dy.vector_rows, grad_h);
  load_chunk(r.src, a.x_or_y.type, c, a.hidden, a.x_or_y.vector_rows, xhat);
  load_gamma(a.gamma, a.weight_type, a.gamma_vector, a.zero_centered_gamma, c, a.hidden, gamma);
  if (a.memory_efficient)
    load_beta(a.beta, a.weight_type, a.beta_vector, c, a.hidden, beta);
  x_hat(a, r.mean, r.rstd, gamma, beta, xhat);
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    grad_h[k] *= gamma[k];
    if (!in_row(c, k, a.hidden)) continue;
    const double g = grad_h[k];
    sum_grad += g;
    sum_grad_xhat += g * static_cast<double>(xhat[k]);  // exact: a product of two floats
  }
}

// dx = rstd * (grad_h - mean(grad_h) - x_hat * mean(grad_h * x_hat)) (+ d_residual_out).
__device__ __forceinline__ void write_dx(const NormBackwardArgs& a, const BackwardRow& r,
                                         int64_t c, float mean_grad, float mean_grad_xhat,
                                         const float (&grad_h)[kChunk],
                                         const float (&xhat)[kChunk]) {
  float dx[kChunk];
#pragma unroll
  for (int k = 0; k < kChunk; ++k)
    dx[k] = r.rstd * fmaf(-xhat[k], mean_grad_xhat, grad_h[k] - mean_grad);
  if (r.d_residual != nullptr) {
    float add[kChunk];
    load_chunk(r.d_residual, a.d_residual_out.type, c, a.hidden, a.d_residual_out.vector_rows,
               add);
#pragma unroll
    for (int k = 0; k < kChunk; ++k) dx[k] += add[k];
  }
  store_chunk(r.dx, a.dx.type, c, a.hidden, a.dx.vector_rows, dx);
}

__global__ void __launch_bounds__(kNormMaxThreads) norm_backward_kernel(NormBackwardArgs a) {
  __shared__ double partial[kNormMaxThreads / kWarp];
  const int64_t hidden = a.hidden;
  const int64_t chunks = chunks_of(hidden);
  const int64_t threads = blockDim.x;
  const double count = static_cast<double>(hidden);
  const bool layer = a.kind == NormKind::Layer;
  SY_FOR_ROW_BLOCKS(i, a.rows) {
    BackwardRow r{};
    r.dy = row_of(a.dy.data, a.dy.type, a.dy.row_stride, i);
    r.src = row_of(a.x_or_y.data, a.x_or_y.type, a.x_or_y.row_stride, i);
    r.d_residual = a.d_residual_out.data != nullptr
                       ? row_of(a.d_residual_out.data, a.d_residual_out.type,
                                a.d_residual_out.row_stride, i)
                       : nullptr;
    r.dx = row_of(a.dx.data, a.dx.type, a.dx.row_stride, i);
    r.rstd = a.rstd[i];
    r.mean = a.mean != nullptr ? a.mean[i] : 0.0f;

    float grad_h[kNormCachedChunks][kChunk], xhat[kNormCachedChunks][kChunk];
    double sum_grad = 0.0;
    double sum_grad_xhat = 0.0;
#pragma unroll
    for (int k = 0; k < kNormCachedChunks; ++k) {
      const int64_t c = threadIdx.x + k * threads;
      if (c < chunks) backward_first_pass(a, r, c, sum_grad, sum_grad_xhat, grad_h[k], xhat[k]);
    }
    for (int64_t c = threadIdx.x + kNormCachedChunks * threads; c < chunks; c += threads) {
      float g[kChunk], x[kChunk];
      backward_first_pass(a, r, c, sum_grad, sum_grad_xhat, g, x);
    }
    sum_grad = block_sum(sum_grad, partial);
    sum_grad_xhat = block_sum(sum_grad_xhat, partial);
    const float mean_grad = layer ? static_cast<float>(sum_grad / count) : 0.0f;
    const float mean_grad_xhat = static_cast<float>(sum_grad_xhat / count);

    // Each thread has read its chunks of dy, x_or_y (and reads d_residual_out's) before it
    // writes the same chunks of dx: dx may be any of them.
#pragma unroll
    for (int k = 0; k < kNormCachedChunks; ++k) {
      const int64_t c = threadIdx.x + k * threads;
      if (c < chunks) write_dx(a, r, c, mean_grad, mean_grad_xhat, grad_h[k], xhat[k]);
    }
    for (int64_t c = threadIdx.x + kNormCachedChunks * threads; c < chunks; c += threads) {
      float g[kChunk], x[kChunk];
      double unused_sum = 0.0, unused_sum_xhat = 0.0;
      backward_first_pass(a, r, c, unused_sum, unused_sum_xhat, g, x);
      write_dx(a, r, c, mean_grad, mean_grad_xhat, g, x);
    }
  }
}

// ---- backward: dgamma / dbeta -----------------------------------------------------------------

// Block (x, y): columns [1024 x, 1024 (x + 1)) of the rows [64 b, 64 (b + 1)) for b = y, y +
// gridDim.y, ...; thread t sums its chunk of columns down the rows in order, in double
// (dy * x_hat exactly: a product of two floats).
__global__ void __launch_bounds__(kPartialThreads)
    weight_partials_kernel(NormBackwardArgs a, int64_t blocks, double* partial_gamma,
                           double* partial_beta) {
  __shared__ float row_mean[kRowsPerPartial];
  __shared__ float row_rstd[kRowsPerPartial];
  const int64_t hidden = a.hidden;
  const int64_t stride = padded_columns(hidden);
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kPartialThreads + threadIdx.x;
  const bool active = c < chunks_of(hidden);
  float gamma[kChunk], beta[kChunk];  // for x_hat in memory-efficient mode
  if (active && a.memory_efficient) {
    load_gamma(a.gamma, a.weight_type, a.gamma_vector, a.zero_centered_gamma, c, hidden, gamma);
    load_beta(a.beta, a.weight_type, a.beta_vector, c, hidden, beta);
  }
  for (int64_t b = blockIdx.y; b < blocks; b += gridDim.y) {
    const int64_t first = b * kRowsPerPartial;
    const int count = static_cast<int>(min(kRowsPerPartial, a.rows - first));
    __syncthreads();  // the previous block of rows is done with row_mean / row_rstd
    if (static_cast<int>(threadIdx.x) < count) {
      row_rstd[threadIdx.x] = a.rstd[first + threadIdx.x];
      row_mean[threadIdx.x] = a.mean != nullptr ? a.mean[first + threadIdx.x] : 0.0f;
    }
    __syncthreads();
    if (!active) continue;

    double sum_gamma[kChunk] = {};
    double sum_beta[kChunk] = {};
    for (int r0 = 0; r0 < count; r0 += kPartialUnroll) {
      float dy[kPartialUnroll][kChunk], xhat[kPartialUnroll][kChunk];
#pragma unroll
      for (int q = 0; q < kPartialUnroll; ++q) {
        if (r0 + q >= count) continue;
        const int64_t i = first + r0 + q;
        load_chunk(row_of(a.dy.data, a.dy.type, a.dy.row_stride, i), a.dy.type, c, hidden,
                   a.dy.vector_rows, dy[q]);
        load_chunk(row_of(a.x_or_y.data, a.x_or_y.type, a.x_or_y.row_stride, i), a.x_or_y.type,
                   c, hidden, a.x_or_y.vector_rows, xhat[q]);
      }
#pragma unroll
      for (int q = 0; q < kPartialUnroll; ++q) {
        if (r0 + q >= count) continue;
        x_hat(a, row_mean[r0 + q], row_rstd[r0 + q], gamma, beta, xhat[q]);
#pragma unroll
        for (int k = 0; k < kChunk; ++k) {
          const double d = dy[q][k];
          sum_gamma[k] += d * static_cast<double>(xhat[q][k]);
          sum_beta[k] += d;
        }
      }
    }
    // Whole chunks: the partial rows are padded_columns(H) long and 64-byte aligned.
    if (partial_gamma != nullptr) {
      double2* out = reinterpret_cast<double2*>(partial_gamma + b * stride + c * kChunk);
#pragma unroll
      for (int k = 0; k < kChunk / 2; ++k) out[k] = make_double2(sum_gamma[2 * k], sum_gamma[2 * k + 1]);
    }
    if (partial_beta != nullptr) {
      double2* out = reinterpret_cast<double2*>(partial_beta + b * stride + c * kChunk);
#pragma unroll
      for (int k = 0; k < kChunk / 2; ++k) out[k] = make_double2(sum_beta[2 * k], sum_beta[2 * k + 1]);
    }
  }
}

// Sum of column j over the partial rows [first, last), in order.
__device__ __forceinline__ double column_sum(const double* partial, int64_t stride, int64_t j,
                                             PartialRange range) {
  double sum = 0.0;
  int64_t b = range.first;
  for (; b + 4 <= range.last; b += 4) {
    double v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) v[q] = partial[(b + q) * stride + j];
#pragma unroll
    for (int q = 0; q < 4; ++q) sum += v[q];
  }
  for (; b < range.last; ++b) sum += partial[b * stride + j];
  return sum;
}

// Block x: columns [32 x, 32 (x + 1)); warp g adds the partial rows finalize_range(blocks, g)
// of its column, then warp 0 adds the 8 group sums in group order (and the old value).
__global__ void __launch_bounds__(kFinalizeThreads)
    weight_finalize_kernel(WeightFinalizeArgs a, int64_t blocks) {
  __shared__ double group_gamma[kFinalizeGroups][kFinalizeColumns];
  __shared__ double group_beta[kFinalizeGroups][kFinalizeColumns];
  const int lane = threadIdx.x % kFinalizeColumns;
  const int group = threadIdx.x / kFinalizeColumns;
  const int64_t stride = padded_columns(a.hidden);
  const PartialRange range = finalize_range(blocks, group);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kFinalizeColumns; first < a.hidden;
       first += static_cast<int64_t>(gridDim.x) * kFinalizeColumns) {
    const int64_t j = first + lane;
    const bool column = j < a.hidden;
    group_gamma[group][lane] =
        column && a.dgamma != nullptr ? column_sum(a.partial_gamma, stride, j, range) : 0.0;
    group_beta[group][lane] =
        column && a.dbeta != nullptr ? column_sum(a.partial_beta, stride, j, range) : 0.0;
    __syncthreads();
    if (group == 0 && column) {
      double sum_gamma = 0.0;
      double sum_beta = 0.0;
#pragma unroll
      for (int g = 0; g < kFinalizeGroups; ++g) {
        sum_gamma += group_gamma[g][lane];
        sum_beta += group_beta[g][lane];
      }
      if (a.dgamma != nullptr) {
        if (a.accumulate) sum_gamma += static_cast<const float*>(a.dgamma)[j];
        store_real(a.dgamma, a.grad_type, j, sum_gamma);
      }
      if (a.dbeta != nullptr) {
        if (a.accumulate) sum_beta += static_cast<const float*>(a.dbeta)[j];
        store_real(a.dbeta, a.grad_type, j, sum_beta);
      }
    }
    __syncthreads();  // group sums read before the next columns overwrite them
  }
}

}  // namespace

cudaError_t launch_norm_forward(const NormForwardArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.hidden <= 0) return cudaSuccess;
  norm_forward_kernel<<<row_grid(args.rows), norm_row_threads(args.hidden), 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t launch_norm_backward(const NormBackwardArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.hidden <= 0) return cudaSuccess;
  norm_backward_kernel<<<row_grid(args.rows), norm_row_threads(args.hidden), 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t launch_norm_weight_partials(const NormBackwardArgs& args, double* partial_gamma,
                                        double* partial_beta, cudaStream_t stream) {
  const int64_t blocks = weight_partial_blocks(args.rows);
  if (blocks <= 0 || args.hidden <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(
                      std::min(ceil_div(chunks_of(args.hidden), kPartialThreads), kMaxGridX)),
                  static_cast<unsigned>(std::min(blocks, kMaxGridY)));
  weight_partials_kernel<<<grid, kPartialThreads, 0, stream>>>(args, blocks, partial_gamma,
                                                               partial_beta);
  return cudaGetLastError();
}

cudaError_t launch_norm_weight_finalize(const WeightFinalizeArgs& args, cudaStream_t stream) {
  if (args.hidden <= 0) return cudaSuccess;
  const dim3 grid(
      static_cast<unsigned>(std::min(ceil_div(args.hidden, kFinalizeColumns), kMaxGridX)));
  weight_finalize_kernel<<<grid, kFinalizeThreads, 0, stream>>>(
      args, weight_partial_blocks(args.rows));
  return cudaGetLastError();
}

cudaError_t norm_kernel_image_status() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, norm_forward_kernel);
}

}  // namespace switchyard::native::cuda
