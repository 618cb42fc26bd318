#include "device_memory.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace switchyard::conformance {
namespace {

constexpr int kCudaSuccess = 0;
constexpr int kMemcpyHostToDevice = 1;
constexpr int kMemcpyDeviceToHost = 2;

void check(int code, const char* call) {
  if (code != kCudaSuccess)
    throw std::runtime_error(std::string(call) + " failed with cudaError_t " +
                             std::to_string(code));
}

}  // namespace

const CudaRuntime& CudaRuntime::instance() {
  static const CudaRuntime runtime;  // thread-safe initialisation
  return runtime;
}

CudaRuntime::CudaRuntime() {
  // The unversioned name exists only with the toolkit installed; a driver-only machine has
  // the versioned ones.
  void* library = nullptr;
  std::string errors;
  for (const char* name :
       {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"}) {
    library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    const char* error = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (error != nullptr ? error : name);
  }
  if (library == nullptr) {
    reason_ = "no CUDA device (the CUDA runtime library could not be loaded: " + errors + ")";
    return;
  }
  malloc_ = reinterpret_cast<MallocFn>(dlsym(library, "cudaMalloc"));
  free_ = reinterpret_cast<FreeFn>(dlsym(library, "cudaFree"));
  memcpy_ = reinterpret_cast<MemcpyFn>(dlsym(library, "cudaMemcpy"));
  stream_synchronize_ = reinterpret_cast<SyncFn>(dlsym(library, "cudaStreamSynchronize"));
  device_count_ = reinterpret_cast<CountFn>(dlsym(library, "cudaGetDeviceCount"));
  if (!malloc_ || !free_ || !memcpy_ || !stream_synchronize_ || !device_count_) {
    reason_ =
        "no CUDA device (the CUDA runtime library lacks cudaMalloc, cudaFree, cudaMemcpy, "
        "cudaStreamSynchronize or cudaGetDeviceCount)";
    return;
  }
  int count = 0;
  const int status = device_count_(&count);
  if (status != kCudaSuccess || count < 1) {
    reason_ = "no CUDA device (cudaGetDeviceCount returned error " + std::to_string(status) + ", " +
              std::to_string(count) + " devices)";
    return;
  }
  available_ = true;
}

void* CudaRuntime::allocate(size_t bytes) const {
  if (!available_) throw std::runtime_error(reason_);
  void* pointer = nullptr;
  check(malloc_(&pointer, bytes == 0 ? 1 : bytes), "cudaMalloc");
  return pointer;
}

void CudaRuntime::release(void* pointer) const noexcept {
  if (available_ && pointer != nullptr) free_(pointer);
}

void CudaRuntime::copy_to_device(void* device, const void* host, size_t bytes) const {
  check(memcpy_(device, host, bytes, kMemcpyHostToDevice), "cudaMemcpy(host to device)");
}

void CudaRuntime::copy_to_host(void* host, const void* device, size_t bytes) const {
  check(memcpy_(host, device, bytes, kMemcpyDeviceToHost), "cudaMemcpy(device to host)");
}

void CudaRuntime::synchronize(void* stream) const {
  check(stream_synchronize_(stream), "cudaStreamSynchronize");
}

}  // namespace switchyard::conformance
