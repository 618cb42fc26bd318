// LayerNorm / RMSNorm / L2Norm kernels, torch-style and straightforward: statistics and
// element math in double, every output rounded once to its dtype.
#include "device_math.cuh"
#include "launch_geometry.cuh"
#include "norm_kernels.hpp"

namespace switchyard::native::cuda {
namespace {

constexpr int kNormThreads = 256;

__device__ __forceinline__ double gamma_eff(const void* gamma, Dtype type, bool zero_centered,
                                            int64_t j) {
  const double g = load_real(gamma, type, j);
  // TE's zero-centred gamma: 1 + gamma added in fp32.
  return zero_centered ? static_cast<double>(1.0f + static_cast<float>(g)) : g;
}

// x_hat of element j of row `src` (x/h, or y with MEMORY_EFFICIENT).
__device__ __forceinline__ double x_hat(const NormBackwardArgs& a, const void* src, int64_t j,
                                        double mean, double rstd) {
  const double v = load_real(src, a.x_or_y.type, j);
  if (!a.memory_efficient) return (v - mean) * rstd;
  if (a.kind == NormKind::L2) return v;  // y is x_hat
  const double beta = a.beta != nullptr ? load_real(a.beta, a.weight_type, j) : 0.0;
  return (v - beta) / gamma_eff(a.gamma, a.weight_type, a.zero_centered_gamma, j);
}

// dy * gamma_eff (dy for L2).
__device__ __forceinline__ double grad_h(const NormBackwardArgs& a, const void* dy, int64_t j) {
  const double g = load_real(dy, a.dy.type, j);
  return a.gamma != nullptr ? g * gamma_eff(a.gamma, a.weight_type, a.zero_centered_gamma, j) : g;
}

__global__ void __launch_bounds__(kNormThreads) norm_forward_kernel(NormForwardArgs a) {
  __shared__ double partial[kNormThreads / kWarp];
  const double count = static_cast<double>(a.hidden);
  const bool layer = a.kind == NormKind::Layer;
  const Dtype x_type = a.x.type;
  SY_FOR_ROW_BLOCKS(i, a.rows) {
    // Every thread reads and writes only its own columns, so y may be x and residual_out may
    // be x or residual.
    const void* h = row_of(a.x.data, x_type, a.x.row_stride, i);
    if (a.residual.data != nullptr) {
      const void* r = row_of(a.residual.data, x_type, a.residual.row_stride, i);
      void* out = row_of(a.residual_out.data, x_type, a.residual_out.row_stride, i);
      SY_FOR_BLOCK_COLUMNS(j, a.hidden) {
        store_real(out, x_type, j, load_real(h, x_type, j) + load_real(r, x_type, j));
      }
      h = out;  // the statistics see exactly the h the caller keeps
    }
    double first = 0.0;
    SY_FOR_BLOCK_COLUMNS(j, a.hidden) {
      const double v = load_real(h, x_type, j);
      first += layer ? v : v * v;
    }
    first = block_sum(first, partial);
    double mean = 0.0;
    double rstd = 0.0;
    if (layer) {
      mean = first / count;
      double squares = 0.0;
      SY_FOR_BLOCK_COLUMNS(j, a.hidden) {
        const double d = load_real(h, x_type, j) - mean;
        squares += d * d;
      }
      squares = block_sum(squares, partial);
      rstd = 1.0 / sqrt(squares / count + a.eps);
    } else {
      rstd = 1.0 / sqrt(first / count + a.eps);
    }
    void* y = row_of(a.y.data, a.y.type, a.y.row_stride, i);
    SY_FOR_BLOCK_COLUMNS(j, a.hidden) {
      double v = (load_real(h, x_type, j) - mean) * rstd;
      if (a.gamma != nullptr) v *= gamma_eff(a.gamma, a.weight_type, a.zero_centered_gamma, j);
      if (a.beta != nullptr) v += load_real(a.beta, a.weight_type, j);
      store_real(y, a.y.type, j, v);
    }
    if (threadIdx.x == 0) {
      if (a.mean != nullptr) a.mean[i] = static_cast<float>(mean);
      a.rstd[i] = static_cast<float>(rstd);
    }
  }
}

__global__ void __launch_bounds__(kNormThreads) norm_backward_kernel(NormBackwardArgs a) {
  __shared__ double partial[kNormThreads / kWarp];
  const double count = static_cast<double>(a.hidden);
  const bool layer = a.kind == NormKind::Layer;
  SY_FOR_ROW_BLOCKS(i, a.rows) {
    const double rstd = a.rstd[i];
    const double mean = a.mean != nullptr ? static_cast<double>(a.mean[i]) : 0.0;
    const void* dy = row_of(a.dy.data, a.dy.type, a.dy.row_stride, i);
    const void* src = row_of(a.x_or_y.data, a.x_or_y.type, a.x_or_y.row_stride, i);
    double sum_grad = 0.0;
    double sum_grad_xhat = 0.0;
    SY_FOR_BLOCK_COLUMNS(j, a.hidden) {
      const double gh = grad_h(a, dy, j);
      sum_grad += gh;
      sum_grad_xhat += gh * x_hat(a, src, j, mean, rstd);
    }
    sum_grad = block_sum(sum_grad, partial);
    sum_grad_xhat = block_sum(sum_grad_xhat, partial);
    const double mean_grad = layer ? sum_grad / count : 0.0;
    const double mean_grad_xhat = sum_grad_xhat / count;
    const void* d_residual =
        a.d_residual_out.data != nullptr
            ? row_of(a.d_residual_out.data, a.d_residual_out.type, a.d_residual_out.row_stride, i)
            : nullptr;
    void* dx = row_of(a.dx.data, a.dx.type, a.dx.row_stride, i);
    // Each thread reads its columns of dy, x_or_y and d_residual_out before writing the same
    // columns of dx: dx may be any of them.
    SY_FOR_BLOCK_COLUMNS(j, a.hidden) {
      const double gh = grad_h(a, dy, j);
      const double xh = x_hat(a, src, j, mean, rstd);
      double v = rstd * (gh - mean_grad - xh * mean_grad_xhat);
      if (d_residual != nullptr) v += load_real(d_residual, a.d_residual_out.type, j);
      store_real(dx, a.dx.type, j, v);
    }
  }
}

__global__ void weight_partials_kernel(NormBackwardArgs a, int64_t blocks,
                                       double* partial_gamma, double* partial_beta) {
  SY_FOR_ROWS_Y(b, blocks) {
    const int64_t first = b * kRowsPerPartial;
    const int64_t last = min(a.rows, first + kRowsPerPartial);
    SY_FOR_COLUMNS_X(j, a.hidden) {
      double sum_gamma = 0.0;
      double sum_beta = 0.0;
      for (int64_t i = first; i < last; ++i) {
        const double rstd = a.rstd[i];
        const double mean = a.mean != nullptr ? static_cast<double>(a.mean[i]) : 0.0;
        const double dy = load_real(row_of(a.dy.data, a.dy.type, a.dy.row_stride, i), a.dy.type, j);
        const void* src = row_of(a.x_or_y.data, a.x_or_y.type, a.x_or_y.row_stride, i);
        sum_gamma += dy * x_hat(a, src, j, mean, rstd);
        sum_beta += dy;
      }
      partial_gamma[b * a.hidden + j] = sum_gamma;
      partial_beta[b * a.hidden + j] = sum_beta;
    }
  }
}

__global__ void weight_finalize_kernel(WeightFinalizeArgs a, int64_t blocks) {
  SY_FOR_COLUMNS_X(j, a.hidden) {
    double sum_gamma = 0.0;
    double sum_beta = 0.0;
    for (int64_t b = 0; b < blocks; ++b) {
      sum_gamma += a.partial_gamma[b * a.hidden + j];
      sum_beta += a.partial_beta[b * a.hidden + j];
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
}

}  // namespace

cudaError_t launch_norm_forward(const NormForwardArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.hidden <= 0) return cudaSuccess;
  norm_forward_kernel<<<row_grid(args.rows), kNormThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t launch_norm_backward(const NormBackwardArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.hidden <= 0) return cudaSuccess;
  norm_backward_kernel<<<row_grid(args.rows), kNormThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t launch_norm_weight_partials(const NormBackwardArgs& args, double* partial_gamma,
                                        double* partial_beta, cudaStream_t stream) {
  const int64_t blocks = weight_partial_blocks(args.rows);
  if (blocks <= 0 || args.hidden <= 0) return cudaSuccess;
  weight_partials_kernel<<<element_grid(blocks, args.hidden), kElementThreads, 0, stream>>>(
      args, blocks, partial_gamma, partial_beta);
  return cudaGetLastError();
}

cudaError_t launch_norm_weight_finalize(const WeightFinalizeArgs& args, cudaStream_t stream) {
  if (args.hidden <= 0) return cudaSuccess;
  weight_finalize_kernel<<<element_grid(1, args.hidden), kElementThreads, 0, stream>>>(
      args, weight_partial_blocks(args.rows));
  return cudaGetLastError();
}

cudaError_t norm_kernel_image_status() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, norm_forward_kernel);
}

}  // namespace switchyard::native::cuda
