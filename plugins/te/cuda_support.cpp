#include "cuda_support.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <map>
#include <mutex>
#include <tuple>

namespace switchyard::te {
namespace {

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}

std::string device_text(int device) { return "cuda:" + std::to_string(device); }

}  // namespace

std::string cuda_error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

sy_status status_of(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation:
      return SY_ERR_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInitializationError:
      return SY_ERR_UNAVAILABLE;
    default:
      return SY_ERR_INTERNAL;
  }
}

void check_cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  sy::fail(status_of(error), std::string("te: ") + what + " failed: " + cuda_error_text(error));
}

void check_cuda(cudaError_t error, const std::string& what) { check_cuda(error, what.c_str()); }

sy_status probe_cuda(std::string* reason) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    *reason = "te runs on NVIDIA GPUs of compute capability 9.0 or newer, and CUDA cannot run "
              "here: cudaGetDeviceCount failed with " + cuda_error_text(error) +
              (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice
                   ? "; no NVIDIA driver or GPU is visible to this process"
                   : "");
    return SY_ERR_UNAVAILABLE;
  }
  if (count == 0) {
    *reason = "te runs on NVIDIA GPUs of compute capability 9.0 or newer, and this machine has "
              "no CUDA device";
    return SY_ERR_UNAVAILABLE;
  }
  std::string found;
  for (int d = 0; d < count; ++d) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess)
      continue;
    if (major >= 9) return SY_OK;
    found += (found.empty() ? "" : ", ") + device_text(d) + " is " + std::to_string(major) +
             "." + std::to_string(minor);
  }
  *reason = "te's kernels are built for compute capability 9.0 (sm_90) and newer; " +
            (found.empty() ? std::string("no device answered its compute capability") : found);
  return SY_ERR_UNAVAILABLE;
}

DeviceInfo device_info(int device) {
  static std::map<int, DeviceInfo> cache;  // guarded by cache_mutex()
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = cache.find(device);
    if (it != cache.end()) return it->second;
  }
  DeviceInfo info;
  const std::string where = " of " + device_text(device);
  check_cuda(cudaDeviceGetAttribute(&info.major, cudaDevAttrComputeCapabilityMajor, device),
             "cudaDeviceGetAttribute(compute capability)" + where);
  check_cuda(cudaDeviceGetAttribute(&info.minor, cudaDevAttrComputeCapabilityMinor, device),
             "cudaDeviceGetAttribute(compute capability)" + where);
  check_cuda(cudaDeviceGetAttribute(&info.multiprocessors, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(multiprocessor count)" + where);
  check_cuda(cudaDeviceGetAttribute(&info.shared_per_multiprocessor,
                                    cudaDevAttrMaxSharedMemoryPerMultiprocessor, device),
             "cudaDeviceGetAttribute(shared memory per multiprocessor)" + where);
  check_cuda(cudaDeviceGetAttribute(&info.max_shared_per_block_optin,
                                    cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
             "cudaDeviceGetAttribute(shared memory per block)" + where);
  check_cuda(cudaDeviceGetAttribute(&info.reserved_shared_per_block,
                                    cudaDevAttrReservedSharedMemoryPerBlock, device),
             "cudaDeviceGetAttribute(reserved shared memory per block)" + where);
  if (info.major < 9)
    sy::fail(SY_ERR_UNAVAILABLE,
             "te: " + device_text(device) + " has compute capability " +
                 std::to_string(info.major) + "." + std::to_string(info.minor) +
                 "; te's kernels are built for 9.0 (sm_90) and newer. Use native, fused or "
                 "liger on this GPU");
  std::lock_guard<std::mutex> lock(cache_mutex());
  cache[device] = info;
  return info;
}

int static_shared_bytes(const void* kernel) {
  static std::map<const void*, int> cache;  // guarded by cache_mutex()
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = cache.find(kernel);
    if (it != cache.end()) return it->second;
  }
  cudaFuncAttributes attributes{};
  check_cuda(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes");
  const int bytes = static_cast<int>(attributes.sharedSizeBytes);
  std::lock_guard<std::mutex> lock(cache_mutex());
  cache[kernel] = bytes;
  return bytes;
}

int blocks_per_multiprocessor(const void* kernel, int threads, std::size_t shared_bytes,
                              int device) {
  using Key = std::tuple<const void*, int, std::size_t, int>;
  static std::map<Key, int> cache;  // guarded by cache_mutex()
  const Key key{kernel, threads, shared_bytes, device};
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  int blocks = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, shared_bytes),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (blocks < 1)
    sy::fail(SY_ERR_INTERNAL, "te: a block of " + std::to_string(threads) + " threads and " +
                                  std::to_string(shared_bytes) +
                                  " bytes of shared memory does not fit one multiprocessor of " +
                                  device_text(device) + " (a bug in te's launch plan)");
  std::lock_guard<std::mutex> lock(cache_mutex());
  cache[key] = blocks;
  return blocks;
}

void allow_all_shared(const void* kernel, int device, const char* name,
                      std::atomic<std::uint64_t>& raised) {
  const std::uint64_t bit = device >= 0 && device < 64 ? (std::uint64_t{1} << device) : 0;
  if (bit != 0 && (raised.load(std::memory_order_acquire) & bit) != 0) return;
  cudaFuncAttributes attributes{};
  check_cuda(cudaFuncGetAttributes(&attributes, kernel), std::string("cudaFuncGetAttributes(") + name + ")");
  const int limit = device_info(device).max_shared_per_block_optin -
                    static_cast<int>(attributes.sharedSizeBytes);
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, limit),
             std::string("cudaFuncSetAttribute(") + name + ", max dynamic shared memory)");
  raised.fetch_or(bit, std::memory_order_acq_rel);
}

DeviceGuard::DeviceGuard(int device) : device_(device) {
  check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ == device) return;
  const cudaError_t error = cudaSetDevice(device);
  if (error != cudaSuccess) check_cuda(error, "cudaSetDevice(" + device_text(device) + ")");
}

DeviceGuard::~DeviceGuard() {
  // Nothing can be reported from here; restoring the caller's device cannot fail once
  // setting ours succeeded.
  if (previous_ >= 0 && previous_ != device_) (void)cudaSetDevice(previous_);
}

void require_device_memory(const void* address, const char* name, DLDevice device) {
  if (address == nullptr) return;
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, address);
  if (error == cudaErrorInvalidValue) {
    (void)cudaGetLastError();  // older drivers report unregistered host memory this way
    attributes.type = cudaMemoryTypeUnregistered;
  } else {
    check_cuda(error, std::string("cudaPointerGetAttributes(") + name + ")");
  }
  const bool on_device =
      attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  if (!on_device)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             std::string(name) + " is labelled " + device_text(device.device_id) +
                 " but its memory is " +
                 (attributes.type == cudaMemoryTypeHost ? "page-locked host memory"
                                                        : "not CUDA device memory") +
                 "; pass memory allocated on that device (cudaMalloc or a framework tensor)");
  if (attributes.type == cudaMemoryTypeDevice && attributes.device != device.device_id)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             std::string(name) + " is labelled " + device_text(device.device_id) +
                 " but its memory is on " + device_text(attributes.device) +
                 "; pass every tensor on the problem's device");
}

}  // namespace switchyard::te
