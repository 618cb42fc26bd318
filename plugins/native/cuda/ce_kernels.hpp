// Launchers of the cross-entropy kernels, one per eager PyTorch op of Megatron's
// vocab-parallel cross entropy (see ce_cuda.cpp for the order). Each returns the launch's
// cudaError_t; none synchronises. rows == 0 or vocab_local == 0 launches nothing.
// z is the fp32 workspace copy of the logits: rows of z_stride = padded_columns(vocab_local)
// floats (whole chunks, 32-byte aligned rows; the padding is scratch, never reduced).
#ifndef SWITCHYARD_NATIVE_CUDA_CE_KERNELS_HPP
#define SWITCHYARD_NATIVE_CUDA_CE_KERNELS_HPP

#include "kernel_types.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace switchyard::native::cuda {

// first_bad (device, preset to all ones) receives the lowest row whose label is neither in
// [0, V) nor ignored (an integer atomicMin: the same row whatever the schedule).
cudaError_t launch_check_labels(const void* labels, int64_t rows, const LabelRule& rule,
                                unsigned long long* first_bad, cudaStream_t stream);

// logits.float(): z[i, j] = logits[i, j] into the fp32 workspace copy (padding set to 0).
cudaError_t launch_upcast(const Matrix& logits, int64_t rows, int64_t vocab_local, float* z,
                          int64_t z_stride, cudaStream_t stream);

// torch.max(z, dim=-1): row maximum and the lowest local index attaining it (NaN wins).
cudaError_t launch_row_max(const float* z, int64_t rows, int64_t vocab_local, int64_t z_stride,
                           float* row_max, int64_t* row_argmax, cudaStream_t stream);

// argmax[i] = vocab_start + argmax[i] where this rank holds the global maximum, else INT64_MAX
// (the candidates of the MIN all-reduce).
cudaError_t launch_argmax_candidates(const float* local_max, const float* global_max,
                                     int64_t vocab_start, int64_t rows, int64_t* argmax,
                                     cudaStream_t stream);

// z -= max (per row).
cudaError_t launch_subtract_max(float* z, int64_t rows, int64_t vocab_local, int64_t z_stride,
                                const float* row_max, cudaStream_t stream);

// target[i] = z[i, label - vocab_start] where this rank owns the (not ignored) label, else 0.
cudaError_t launch_gather_target(const float* z, int64_t rows, int64_t vocab_local,
                                 int64_t z_stride, const void* labels, const LabelRule& rule,
                                 float* target, cudaStream_t stream);

// z.sum(dim=-1), accumulated in double in a fixed order, rounded to fp32.
cudaError_t launch_row_sum(const float* z, int64_t rows, int64_t vocab_local, int64_t z_stride,
                           float* sums, cudaStream_t stream);

// torch.exp(z, out=z).
cudaError_t launch_exp(float* z, int64_t rows, int64_t vocab_local, int64_t z_stride,
                       cudaStream_t stream);

struct LossArgs {
  int64_t rows = 0;
  const float* global_max = nullptr;
  const float* sum_exp = nullptr;       // global sums of exp(z - max)
  const float* target = nullptr;        // global target logits (shifted)
  const float* sum_shifted = nullptr;   // global sums of z - max; NULL without smoothing
  const int64_t* argmax_in = nullptr;   // global argmax ids; NULL without SY_CE_ARGMAX
  const void* labels = nullptr;
  LabelRule rule;
  double smoothing = 0;                 // s
  float* loss = nullptr;
  float* lse = nullptr;
  int64_t* argmax_out = nullptr;
};
// log(sum), lse, loss (and the argmax copy), one thread per row.
cudaError_t launch_loss(const LossArgs& args, cudaStream_t stream);

struct ForwardGradArgs {
  int64_t rows = 0;
  int64_t vocab_local = 0;
  const float* exp_z = nullptr;    // exp(z - max), rows of z_stride
  int64_t z_stride = 0;
  const float* sum_exp = nullptr;  // global sums
  const float* grad_scale = nullptr;
  const void* labels = nullptr;
  LabelRule rule;
  Smoothing smoothing;
  MutableMatrix grad;              // may be the logits themselves
};
// grad = grad_scale * (exp_z / sum_exp - q) in fp32, rounded to the gradient dtype.
cudaError_t launch_forward_grad(const ForwardGradArgs& args, cudaStream_t stream);

struct BackwardArgs {
  int64_t rows = 0;
  int64_t vocab_local = 0;
  Matrix logits;
  const void* labels = nullptr;
  const float* lse = nullptr;
  const float* grad_loss = nullptr;
  LabelRule rule;
  Smoothing smoothing;
  MutableMatrix grad;              // may be exactly the logits (in place)
};
// grad = grad_loss * (exp(z - lse) - q) in fp32 (z - lse split exactly into hi + lo, so the
// exponent sees no rounding of the difference), rounded to the gradient dtype.
cudaError_t launch_backward(const BackwardArgs& args, cudaStream_t stream);

// cudaSuccess when the kernels of this build can run on the current device
// (cudaFuncGetAttributes of one of them); the error otherwise, e.g.
// cudaErrorNoKernelImageForDevice for a GPU of another architecture.
cudaError_t ce_kernel_image_status();

}  // namespace switchyard::native::cuda

#endif
