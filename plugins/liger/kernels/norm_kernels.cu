// Launches of the norm kernels (norm_device.cuh) on the caller's stream.
#include "norm_device.cuh"

#include <utility>

namespace switchyard::liger {
namespace {

struct StreamLaunch {
  cudaStream_t stream;
  template <class... Params, class... Args>
  void operator()(unsigned blocks, int threads, size_t shared_bytes, void (*kernel)(Params...),
                  Args&&... args) const {
    kernel<<<blocks, threads, shared_bytes, stream>>>(std::forward<Args>(args)...);
  }
};

}  // namespace

cudaError_t launch_norm_forward(const NormForwardArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  dispatch_norm_forward(StreamLaunch{stream}, a);
  return cudaGetLastError();
}

cudaError_t launch_norm_backward(const NormBackwardArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  if (backward_shared_bytes(a) > 48 * 1024) {
    // Always the same (largest) value: concurrent calls with other hidden sizes never lower
    // the limit between another call's attribute and its launch.
    const cudaError_t status =
        cudaFuncSetAttribute(backward_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kMaxDynamicSharedBytes));
    if (status != cudaSuccess) return status;
  }
  dispatch_norm_backward(StreamLaunch{stream}, a);
  return cudaGetLastError();
}

cudaError_t launch_norm_weight_grad(const float* partial, int64_t blocks, int64_t hidden,
                                    void* out, Dt out_dt, bool accumulate, cudaStream_t stream) {
  if (hidden == 0) return cudaSuccess;
  dispatch_norm_weight_grad(StreamLaunch{stream}, partial, blocks, hidden, out, out_dt,
                            accumulate);
  return cudaGetLastError();
}

}  // namespace switchyard::liger
