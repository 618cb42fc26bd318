// Launchers of the LayerNorm / RMSNorm / L2Norm kernels. One block per row for y and dx (the
// statistics of a row are reduced in a fixed tree, in double, so a row's results are
// bit-identical from run to run and independent of the batch); dgamma/dbeta in two stages
// without atomics: per-block-of-rows partial sums into the workspace, then a finalize kernel
// that adds the partials of a column in block order. None synchronises.
#ifndef SWITCHYARD_NATIVE_CUDA_NORM_KERNELS_HPP
#define SWITCHYARD_NATIVE_CUDA_NORM_KERNELS_HPP

#include "kernel_types.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace switchyard::native::cuda {

// Rows per dgamma/dbeta partial: the partials are [ceil(N / kRowsPerPartial), H] doubles each.
constexpr int64_t kRowsPerPartial = 64;

enum class NormKind : int32_t { Layer = 0, Rms = 1, L2 = 2 };  // = sy_norm_kind

struct NormForwardArgs {
  int64_t rows = 0;
  int64_t hidden = 0;
  NormKind kind = NormKind::Rms;
  double eps = 0;
  bool zero_centered_gamma = false;
  Matrix x;
  Matrix residual;             // data NULL without SY_NORM_RESIDUAL
  MutableMatrix residual_out;  // h = round(x + residual)
  const void* gamma = nullptr; // NULL for L2
  const void* beta = nullptr;  // NULL: beta = 0
  Dtype weight_type = Dtype::F32;
  MutableMatrix y;
  float* mean = nullptr;       // LayerNorm only
  float* rstd = nullptr;
};
cudaError_t launch_norm_forward(const NormForwardArgs& args, cudaStream_t stream);

struct NormBackwardArgs {
  int64_t rows = 0;
  int64_t hidden = 0;
  NormKind kind = NormKind::Rms;
  bool zero_centered_gamma = false;
  bool memory_efficient = false;  // x_or_y is y
  Matrix dy;
  Matrix x_or_y;
  const void* gamma = nullptr;
  const void* beta = nullptr;
  Dtype weight_type = Dtype::F32;
  const float* mean = nullptr;    // LayerNorm from x; NULL otherwise
  const float* rstd = nullptr;
  Matrix d_residual_out;          // data NULL when absent
  MutableMatrix dx;               // may be dy, x_or_y or d_residual_out themselves
};
// dx, one block per row. Launch after the partials: dx may be written over dy or x_or_y.
cudaError_t launch_norm_backward(const NormBackwardArgs& args, cudaStream_t stream);

// partial_gamma[b * H + j] = sum over rows [b * kRowsPerPartial, ...) of dy * x_hat (and
// partial_beta of dy), each row in order.
cudaError_t launch_norm_weight_partials(const NormBackwardArgs& args, double* partial_gamma,
                                        double* partial_beta, cudaStream_t stream);

struct WeightFinalizeArgs {
  int64_t rows = 0;
  int64_t hidden = 0;
  const double* partial_gamma = nullptr;
  const double* partial_beta = nullptr;
  bool accumulate = false;  // += into float32 buffers
  void* dgamma = nullptr;   // NULL when not requested
  void* dbeta = nullptr;
  Dtype grad_type = Dtype::F32;
};
// dgamma[j] = sum over blocks in order of partial_gamma[b, j] (+ the old value), rounded once.
cudaError_t launch_norm_weight_finalize(const WeightFinalizeArgs& args, cudaStream_t stream);

inline int64_t weight_partial_blocks(int64_t rows) {
  return (rows + kRowsPerPartial - 1) / kRowsPerPartial;
}

cudaError_t norm_kernel_image_status();

}  // namespace switchyard::native::cuda

#endif
