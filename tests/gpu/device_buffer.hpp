// Device memory for the GPU checks: an owned cudaMalloc allocation with its host image.
#ifndef SWITCHYARD_TESTS_GPU_DEVICE_BUFFER_HPP
#define SWITCHYARD_TESTS_GPU_DEVICE_BUFFER_HPP

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpu_test {

inline void cuda_check(cudaError_t error, const std::string& what) {
  if (error != cudaSuccess)
    throw std::runtime_error(what + " failed: " + cudaGetErrorName(error) + " (" +
                             cudaGetErrorString(error) + ")");
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    cuda_check(cudaMalloc(&data_, bytes == 0 ? 1 : bytes), "cudaMalloc(" + std::to_string(bytes) + ")");
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), bytes_(other.bytes_) {
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (data_ != nullptr) cudaFree(data_);
      data_ = other.data_;
      bytes_ = other.bytes_;
      other.data_ = nullptr;
      other.bytes_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

  // A copy from pageable memory may return before its DMA has landed, and it is ordered only
  // with the legacy default stream: a plugin running on a non-blocking stream could then see
  // (or be overwritten by) the tail of the copy. The device synchronisation makes the upload
  // complete before anything the checks enqueue next. (The likely cause of one tp2-nccl-liger
  // failure: the last row of a poisoned gradient reported unwritten, not reproduced in reruns.)
  void upload(const std::vector<unsigned char>& host) {
    if (host.size() != bytes_) throw std::runtime_error("upload: size mismatch");
    cuda_check(cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after cudaMemcpy H2D");
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> host(bytes_);
    cuda_check(cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return host;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace gpu_test

#endif
