// The CUDA device: one GPU, one non-blocking stream, zero-filled allocations, and copies
// that wait for the stream (the model reuses its host buffers right after a copy).
#include "cuda_device.hpp"

#include "cuda_check.hpp"
#include "cuda_kernels.hpp"

#include <cstdint>
#include <limits>

namespace switchyard::lm_head {
namespace {

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int32_t index) : index_(index) {
    activate();
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), index_,
               "cudaStreamCreateWithFlags");
    // Keep freed scratch in the pool: scatter_add_rows and mean allocate every step.
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, index_) == cudaSuccess) {
      uint64_t keep = std::numeric_limits<uint64_t>::max();
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    cudaGetLastError();  // the pool attribute is an optimisation; its failure is not an error
    kernels_ = std::make_unique<CudaKernels>(index_, stream_);
  }
  ~CudaDevice() override {
    if (stream_ != nullptr) {
      cudaSetDevice(index_);
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  DLDevice dl_device() const override { return DLDevice{kDLCUDA, index_}; }
  std::string name() const override { return "cuda:" + std::to_string(index_); }

  std::shared_ptr<void> allocate(size_t bytes) const override {
    activate();
    void* memory = nullptr;
    const size_t size = bytes == 0 ? 1 : bytes;
    cuda_check(cudaMalloc(&memory, size), index_,
               "cudaMalloc (" + std::to_string(bytes) + " bytes)");
    std::shared_ptr<void> owned(memory, [index = index_](void* p) {
      // cudaFree waits for the work that may still use the buffer.
      cudaSetDevice(index);
      cudaFree(p);
    });
    cuda_check(cudaMemsetAsync(memory, 0, size, stream_), index_, "cudaMemsetAsync");
    cuda_check(cudaStreamSynchronize(stream_), index_, "cudaStreamSynchronize after a memset");
    return owned;
  }

  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) const override {
    if (bytes == 0) return;
    activate();
    cuda_check(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_),
               index_, "cudaMemcpyAsync (" + std::to_string(bytes) + " bytes, host to device)");
    cuda_check(cudaStreamSynchronize(stream_), index_, "cudaStreamSynchronize after a copy");
  }

  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) const override {
    if (bytes == 0) return;
    activate();
    cuda_check(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_),
               index_, "cudaMemcpyAsync (" + std::to_string(bytes) + " bytes, device to host)");
    cuda_check(cudaStreamSynchronize(stream_), index_, "cudaStreamSynchronize after a copy");
  }

  const Kernels& kernels() const override { return *kernels_; }
  void* stream() const override { return stream_; }

 private:
  void activate() const { cuda_check(cudaSetDevice(index_), index_, "cudaSetDevice"); }

  int32_t index_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaKernels> kernels_;
};

}  // namespace

bool cuda_device_built() { return true; }

std::unique_ptr<Device> make_cuda_device(int32_t index) {
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) {
    cudaGetLastError();
    int seen = 0;
    throw Error(SY_ERR_UNAVAILABLE,
                "--device cuda:" + std::to_string(index) + ": cannot train on CUDA: " +
                    describe_cuda_devices(&seen) + "; the CUDA runtime says: " +
                    cudaGetErrorString(counted) + " (" + cudaGetErrorName(counted) +
                    "). Next step: run with --device cpu, or on a machine with an NVIDIA GPU "
                    "and its driver.");
  }
  if (index < 0 || index >= count) {
    throw Error(SY_ERR_UNAVAILABLE,
                "--device cuda:" + std::to_string(index) + ": no such CUDA device; this "
                "machine has " + std::to_string(count) + " (cuda:0" +
                    (count > 1 ? "..cuda:" + std::to_string(count - 1) : std::string()) +
                    "). Next step: pick one of those, or check CUDA_VISIBLE_DEVICES.");
  }
  return std::make_unique<CudaDevice>(index);
}

}  // namespace switchyard::lm_head
