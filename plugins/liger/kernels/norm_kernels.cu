// Launches of the norm kernels (norm_dispatch.cuh) on the caller's stream.
#include "norm_dispatch.cuh"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace switchyard::liger {
namespace {

// The (kernel, device) pairs whose shared-memory attributes are set. One record for every
// kernel instantiation, keyed by its address: a `static` inside a function templated on the
// kernel's type would be shared by every kernel of that signature (the 48 KB launch failure
// of forward_ring_kernel<4>, whose attribute was never raised).
struct SharedOptIns {
  std::mutex mutex;
  std::vector<std::pair<const void*, int>> done;

  bool contains(const void* kernel, int device) {
    std::lock_guard<std::mutex> lock(mutex);
    return std::find(done.begin(), done.end(), std::make_pair(kernel, device)) != done.end();
  }
  void add(const void* kernel, int device) {
    std::lock_guard<std::mutex> lock(mutex);
    done.emplace_back(kernel, device);
  }
};

SharedOptIns& shared_opt_ins() {
  static SharedOptIns opt_ins;
  return opt_ins;
}

// Kernels with dynamic shared memory (the ring kernels, the shared-memory backward), once per
// kernel and device: the largest carve-out, so that the ring plan's blocks per SM fit beside
// each other, and the dynamic limit raised to all the device allows beside the kernel's static
// shared memory. The default limit is 48 KB *less the static bytes*, so any dynamic size near
// 48 KB needs it: it is raised whatever the size. Always the same values: concurrent calls
// never lower them between another call's attribute and its launch.
cudaError_t allow_shared(const void* kernel) {
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  SharedOptIns& opt_ins = shared_opt_ins();
  if (opt_ins.contains(kernel, device)) return cudaSuccess;
  int optin = 0;
  status = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  cudaFuncAttributes attributes{};
  if (status == cudaSuccess) status = cudaFuncGetAttributes(&attributes, kernel);
  if (status == cudaSuccess)
    status = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  cudaSharedmemCarveoutMaxShared);
  if (status == cudaSuccess)
    status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  optin - static_cast<int>(attributes.sharedSizeBytes));
  if (status == cudaSuccess) opt_ins.add(kernel, device);
  return status;
}

// Launches on `stream`; the first failure (of an attribute or a launch) is kept in *status and
// skips any later launch.
struct StreamLaunch {
  cudaStream_t stream;
  cudaError_t* status;

  template <class... Params, class... Args>
  void operator()(unsigned blocks, int threads, size_t shared_bytes, void (*kernel)(Params...),
                  Args&&... args) const {
    if (*status != cudaSuccess) return;
    if (shared_bytes > 0) *status = allow_shared(reinterpret_cast<const void*>(kernel));
    if (*status != cudaSuccess) return;
    kernel<<<blocks, threads, shared_bytes, stream>>>(std::forward<Args>(args)...);
    *status = cudaGetLastError();
  }
};

}  // namespace

cudaError_t launch_norm_forward(const NormForwardArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  cudaError_t status = cudaSuccess;
  dispatch_norm_forward(StreamLaunch{stream, &status}, a);
  return status;
}

cudaError_t launch_norm_backward(const NormBackwardArgs& a, cudaStream_t stream) {
  if (a.rows == 0) return cudaSuccess;
  cudaError_t status = cudaSuccess;
  dispatch_norm_backward(StreamLaunch{stream, &status}, a);
  return status;
}

cudaError_t launch_norm_weight_grad(const float* partial, int64_t blocks, int64_t hidden,
                                    void* out, Dt out_dt, bool accumulate, cudaStream_t stream) {
  if (hidden == 0) return cudaSuccess;
  cudaError_t status = cudaSuccess;
  dispatch_norm_weight_grad(StreamLaunch{stream, &status}, partial, blocks, hidden, out, out_dt,
                            accumulate);
  return status;
}

}  // namespace switchyard::liger
