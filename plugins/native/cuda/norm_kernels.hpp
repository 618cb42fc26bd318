// Launchers of the LayerNorm / RMSNorm / L2Norm kernels. One block per row for y and dx, of
// norm_row_threads(H) threads holding kNormCachedChunks chunks each in registers between the
// passes over the row (the statistics of a row are reduced in double in a fixed tree, so a
// row's results are bit-identical from run to run and independent of the batch); dgamma/dbeta
// in two stages without atomics: per-block-of-64-rows partial sums into the workspace, then a
// finalize kernel that adds the partials of a column in a fixed order (chunk_geometry.hpp).
// None synchronises.
#ifndef SWITCHYARD_NATIVE_CUDA_NORM_KERNELS_HPP
#define SWITCHYARD_NATIVE_CUDA_NORM_KERNELS_HPP

#include "chunk_geometry.hpp"
#include "kernel_types.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace switchyard::native::cuda {

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
  bool gamma_vector = false;   // gamma / beta start 16-byte aligned
  bool beta_vector = false;
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
  bool gamma_vector = false;      // gamma / beta start 16-byte aligned
  bool beta_vector = false;
  const float* mean = nullptr;    // LayerNorm from x; NULL otherwise
  const float* rstd = nullptr;
  Matrix d_residual_out;          // data NULL when absent
  MutableMatrix dx;               // may be dy, x_or_y or d_residual_out themselves
};
// dx, one block per row. Launch after the partials: dx may be written over dy or x_or_y.
cudaError_t launch_norm_backward(const NormBackwardArgs& args, cudaStream_t stream);

// partial_gamma[b * padded_columns(H) + j] = sum over rows [b * kRowsPerPartial, ...) of
// dy * x_hat (and partial_beta of dy), each row in order. A NULL partial is not computed.
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
// dgamma[j] = the partials of column j added in a fixed order (finalize_range), then the old
// value (SY_NORM_ACCUMULATE_GRAD_WEIGHT), rounded once.
cudaError_t launch_norm_weight_finalize(const WeightFinalizeArgs& args, cudaStream_t stream);

cudaError_t norm_kernel_image_status();

}  // namespace switchyard::native::cuda

#endif
