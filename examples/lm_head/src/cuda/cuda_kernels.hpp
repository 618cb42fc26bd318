// The CUDA implementation of the LM head's kernels (cuda_kernels.cu). Every kernel is
// enqueued on the device's stream; only mean() waits for it (it returns a host value).
// Results are deterministic (no float atomics), and the sums run in the CPU kernels' order
// with separate multiplies and adds (no FMA contraction), so most outputs equal the CPU's.
#ifndef SWITCHYARD_LM_HEAD_CUDA_KERNELS_HPP
#define SWITCHYARD_LM_HEAD_CUDA_KERNELS_HPP

#include <switchyard/lm_head/kernels.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace switchyard::lm_head {

class CudaKernels final : public Kernels {
 public:
  CudaKernels(int32_t device, cudaStream_t stream) : device_(device), stream_(stream) {}

  void gather_rows(const float* table, const int64_t* ids, int64_t n, int64_t width,
                   float* out) const override;
  void scatter_add_rows(const float* rows, const int64_t* ids, int64_t n, int64_t width,
                        float* table_grad) const override;
  void project(const float* y, const float* w, int64_t n, int64_t h, int64_t vp,
               float* logits) const override;
  void project_grad_input(const float* dlogits, const float* w, int64_t n, int64_t h,
                          int64_t vp, double* dy) const override;
  void project_grad_weight(const float* y, const float* dlogits, int64_t n, int64_t h,
                           int64_t vp, float* dw) const override;
  void fill(float* out, int64_t count, float value) const override;
  void to_float(const double* in, int64_t count, float* out) const override;
  double mean(const float* values, int64_t count) const override;
  void sgd_step(float* param, const float* grad, int64_t count, float lr) const override;
  void adam_step(float* param, const float* grad, float* m, float* v, int64_t count,
                 const AdamHyper& hyper) const override;

 private:
  void activate() const;
  void check_launch(const char* kernel) const;

  int32_t device_;
  cudaStream_t stream_;
};

}  // namespace switchyard::lm_head

#endif
