// Launches of the cross-entropy kernels (ce_device.cuh) on the caller's stream.
#include "ce_device.cuh"

#include <utility>

namespace switchyard::liger {
namespace {

// A triple-chevron launch; errors are collected by cudaGetLastError after the dispatch.
struct StreamLaunch {
  cudaStream_t stream;
  template <class... Params, class... Args>
  void operator()(unsigned blocks, int threads, size_t shared_bytes, void (*kernel)(Params...),
                  Args&&... args) const {
    kernel<<<blocks, threads, shared_bytes, stream>>>(std::forward<Args>(args)...);
  }
};

}  // namespace

cudaError_t launch_ce_check_labels(const CeRows& r, unsigned long long* first_bad,
                                   cudaStream_t stream) {
  if (r.rows == 0) return cudaSuccess;
  dispatch_ce_check_labels(StreamLaunch{stream}, r, first_bad);
  return cudaGetLastError();
}

cudaError_t launch_ce_stats(const CeRows& r, const CeForwardOut& out, cudaStream_t stream) {
  if (r.rows == 0) return cudaSuccess;
  dispatch_ce_stats(StreamLaunch{stream}, r, out);
  return cudaGetLastError();
}

cudaError_t launch_ce_fused(const CeRows& r, const CeForwardOut& out, const CeGradOut& grad,
                            cudaStream_t stream) {
  if (r.rows == 0) return cudaSuccess;
  dispatch_ce_fused(StreamLaunch{stream}, r, out, grad);
  return cudaGetLastError();
}

cudaError_t launch_ce_partial_stats(const CeRows& r, const CeTpScratch& tp, cudaStream_t stream) {
  if (r.rows == 0) return cudaSuccess;
  dispatch_ce_partial_stats(StreamLaunch{stream}, r, tp);
  return cudaGetLastError();
}

cudaError_t launch_ce_tp_combine(const CeRows& r, const CeTpScratch& tp, cudaStream_t stream) {
  if (r.rows == 0) return cudaSuccess;
  dispatch_ce_tp_combine(StreamLaunch{stream}, r, tp);
  return cudaGetLastError();
}

cudaError_t launch_ce_tp_finalize(const CeRows& r, const CeTpScratch& tp, const CeForwardOut& out,
                                  cudaStream_t stream) {
  if (r.rows == 0) return cudaSuccess;
  dispatch_ce_tp_finalize(StreamLaunch{stream}, r, tp, out);
  return cudaGetLastError();
}

cudaError_t launch_ce_gradient(const CeRows& r, const CeGradOut& grad, cudaStream_t stream) {
  if (r.rows == 0) return cudaSuccess;
  dispatch_ce_gradient(StreamLaunch{stream}, r, grad);
  return cudaGetLastError();
}

}  // namespace switchyard::liger
