// CUDA device memory for the CUDA cases, without linking CUDA: the CUDA runtime library is
// opened with dlopen on first use. On a machine without it (or without a GPU) available()
// is false and reason() says why, starting with "no CUDA device".
#ifndef SWITCHYARD_CONFORMANCE_DEVICE_MEMORY_HPP
#define SWITCHYARD_CONFORMANCE_DEVICE_MEMORY_HPP

#include <cstddef>
#include <string>

namespace switchyard::conformance {

class CudaRuntime {
 public:
  // Opened once per process (thread-safe); never closed.
  static const CudaRuntime& instance();

  bool available() const { return available_; }
  const std::string& reason() const { return reason_; }

  // All throw std::runtime_error naming the CUDA call and its error code.
  void* allocate(size_t bytes) const;
  void release(void* pointer) const noexcept;
  void copy_to_device(void* device, const void* host, size_t bytes) const;
  void copy_to_host(void* host, const void* device, size_t bytes) const;
  void synchronize(void* stream) const;

 private:
  CudaRuntime();
  using MallocFn = int (*)(void**, size_t);
  using FreeFn = int (*)(void*);
  using MemcpyFn = int (*)(void*, const void*, size_t, int);
  using SyncFn = int (*)(void*);
  using CountFn = int (*)(int*);

  bool available_ = false;
  std::string reason_;
  MallocFn malloc_ = nullptr;
  FreeFn free_ = nullptr;
  MemcpyFn memcpy_ = nullptr;
  SyncFn stream_synchronize_ = nullptr;
  CountFn device_count_ = nullptr;
};

}  // namespace switchyard::conformance

#endif
