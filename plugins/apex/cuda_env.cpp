#include "cuda_env.hpp"

#include "launch.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>
#include <mutex>

namespace switchyard::apex {
namespace {

std::string pointer_text(const void* address) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%p", address);
  return buffer;
}

int device_count_or_reason(std::string& reason) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    reason = "apex needs a CUDA GPU and its driver: cudaGetDeviceCount failed: " +
             error_text(error) +
             "; run where a GPU is visible, or choose a backend that runs on the CPU (native)";
    return 0;
  }
  if (count < 1) {
    reason = "apex needs a CUDA GPU: cudaGetDeviceCount found 0 devices (is "
             "CUDA_VISIBLE_DEVICES empty?); choose a backend that runs on the CPU (native)";
    return 0;
  }
  return count;
}

// Why the kernels cannot run on `device` ("" when they can), asked once per device.
std::string kernel_image_problem(int device) {
  static std::mutex mutex;
  static std::map<int, std::string> answers;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = answers.find(device); found != answers.end()) return found->second;
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) {
    cudaGetLastError();
    previous = -1;
  }
  int error = previous == device ? cudaSuccess : cudaSetDevice(device);
  if (error == cudaSuccess) error = kernel_image_status();
  if (previous >= 0 && previous != device) cudaSetDevice(previous);
  cudaGetLastError();
  std::string reason;
  if (error != cudaSuccess) {
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    cudaGetLastError();
    reason = "apex's kernels (built for CUDA architectures " SWITCHYARD_APEX_CUDA_ARCHITECTURES
             ") cannot run on cuda:" +
             std::to_string(device) + " (compute capability " + std::to_string(major) + "." +
             std::to_string(minor) + "): " + error_text(error) +
             "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(major) +
             std::to_string(minor);
  }
  answers.emplace(device, reason);
  return reason;
}

struct Machine {
  int device_count = 0;
  std::string reason;  // why nothing can run; "" otherwise
};

const Machine& machine() {
  static const Machine m = [] {
    Machine r;
    r.device_count = device_count_or_reason(r.reason);
    if (r.device_count > 0) r.reason = kernel_image_problem(0);
    return r;
  }();
  return m;
}

}  // namespace

std::string error_text(int cuda_error) {
  return std::string(cuda_error_name(cuda_error)) + " (" + cuda_error_string(cuda_error) + ")";
}

sy_status status_of(int cuda_error) {
  switch (static_cast<cudaError_t>(cuda_error)) {
    case cudaErrorMemoryAllocation:
      return SY_ERR_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInitializationError:
    case cudaErrorStubLibrary:
      return SY_ERR_UNAVAILABLE;
    case cudaErrorInvalidResourceHandle:  // the caller's stream
      return SY_ERR_INVALID_ARGUMENT;
    default:
      return SY_ERR_INTERNAL;
  }
}

void check_cuda(int cuda_error, const std::string& what) {
  if (cuda_error == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error must not be reported again by the next call
  sy::fail(status_of(cuda_error), "apex: " + what + " failed: " + error_text(cuda_error));
}

const std::string& unavailable_reason() { return machine().reason; }

void require_device(DLDevice device) {
  const std::string name = sy::device_name(device);
  const Machine& m = machine();
  if (m.device_count < 1)
    sy::fail(SY_ERR_UNAVAILABLE, "problem.device = " + name + ": " + m.reason);
  if (device.device_id < 0)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             "problem.device = " + name + " has a negative device id; expected cuda:0 to cuda:" +
                 std::to_string(m.device_count - 1));
  if (device.device_id >= m.device_count)
    sy::fail(SY_ERR_UNAVAILABLE,
             "problem.device = " + name + " does not exist: this machine has " +
                 std::to_string(m.device_count) + " CUDA device" +
                 (m.device_count == 1 ? "" : "s") + " (cuda:0 to cuda:" +
                 std::to_string(m.device_count - 1) + ")");
  const std::string image = kernel_image_problem(device.device_id);
  if (!image.empty()) sy::fail(SY_ERR_UNAVAILABLE, "problem.device = " + name + ": " + image);
}

DeviceScope::DeviceScope(int device) {
  check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    switched_ = true;
  }
}

DeviceScope::~DeviceScope() {
  if (switched_ && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
}

int sm_count(int device) {
  static std::mutex mutex;
  static std::map<int, int> counts;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = counts.find(device); found != counts.end()) return found->second;
  int count = 0;
  check_cuda(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(cudaDevAttrMultiProcessorCount)");
  if (count < 1) count = 1;
  counts.emplace(device, count);
  return count;
}

void require_device_memory(const void* address, const char* name, DLDevice device) {
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, address);
  const std::string where = std::string(name) + " (" + pointer_text(address) + ")";
  const std::string label = sy::device_name(device);
  if (error != cudaSuccess) {
    cudaGetLastError();
    sy::fail(SY_ERR_INVALID_ARGUMENT, where + " is labelled " + label +
                                          " but CUDA does not know this address "
                                          "(cudaPointerGetAttributes: " +
                                          error_text(error) + "); pass memory of " + label);
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      if (attributes.device != device.device_id)
        sy::fail(SY_ERR_INVALID_ARGUMENT,
                 where + " is labelled " + label + " but is memory of cuda:" +
                     std::to_string(attributes.device) +
                     "; label it with the device that holds it");
      return;
    case cudaMemoryTypeManaged:
      return;  // reachable from the device
    case cudaMemoryTypeHost:
      sy::fail(SY_ERR_INVALID_ARGUMENT,
               where + " is labelled " + label +
                   " but is page-locked host memory (cudaMallocHost/cudaHostRegister); copy it "
                   "to the GPU");
    default:
      sy::fail(SY_ERR_INVALID_ARGUMENT,
               where + " is labelled " + label +
                   " but is ordinary host memory (not allocated by CUDA); copy it to the GPU");
  }
}

void require_device_tensor(const DLTensor* tensor, const char* name, DLDevice device) {
  if (tensor == nullptr) return;
  int64_t elements = 1;
  for (int d = 0; d < tensor->ndim; ++d) elements *= tensor->shape[d];
  if (elements == 0) return;
  require_device_memory(static_cast<const char*>(tensor->data) + tensor->byte_offset, name,
                        device);
}

}  // namespace switchyard::apex
