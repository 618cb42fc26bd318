#include "cuda_check.hpp"

#include "ce_kernels.hpp"
#include "norm_kernels.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cstdio>
#include <map>
#include <mutex>

namespace switchyard::native::cuda {
namespace {

sy_status status_of(cudaError_t error) {
  switch (error) {
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
    case cudaErrorInvalidResourceHandle:
      return SY_ERR_INVALID_ARGUMENT;
    default:
      return SY_ERR_INTERNAL;
  }
}

std::string pointer_text(const void* address) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%p", address);
  return buffer;
}

// Why the kernels cannot run on `device` ("" when they can), asked once per device: the
// kernels exist for the architectures of the build only. The reference stays valid (map nodes
// do not move).
const std::string& kernel_image_problem(int device) {
  static std::mutex mutex;
  static std::map<int, std::string> answers;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = answers.find(device); found != answers.end()) return found->second;

  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) {
    cudaGetLastError();
    previous = -1;
  }
  cudaError_t error = previous == device ? cudaSuccess : cudaSetDevice(device);
  if (error == cudaSuccess) error = ce_kernel_image_status();
  if (error == cudaSuccess) error = norm_kernel_image_status();
  if (previous >= 0 && previous != device) cudaSetDevice(previous);
  std::string reason;
  if (error != cudaSuccess) {
    cudaGetLastError();
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    cudaGetLastError();
    reason = "native's CUDA kernels (built for CUDA architectures " +
             std::string(built_architectures()) + ") cannot run on cuda:" +
             std::to_string(device) + " (compute capability " + std::to_string(major) + "." +
             std::to_string(minor) + "): " + error_text(error) +
             "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(major) +
             std::to_string(minor);
  }
  return answers.emplace(device, std::move(reason)).first->second;
}

}  // namespace

std::string error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

void check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error must not be reported again by the next call
  sy::fail(status_of(error),
           std::string("native (CUDA): ") + what + " failed: " + error_text(error));
}

const char* built_architectures() { return SWITCHYARD_NATIVE_CUDA_ARCHITECTURES; }
const char* built_toolkit() { return SWITCHYARD_NATIVE_CUDA_TOOLKIT; }

std::string CudaStatus::describe() const {
  if (!usable())
    return "CUDA path unavailable: " + reason + "; native serves CPU tensors only on this machine";
  return "CUDA path: " + std::to_string(device_count) + " CUDA device" +
         (device_count == 1 ? "" : "s") + " visible; kernels built for CUDA architectures " +
         built_architectures() + " with CUDA " + built_toolkit() + " (runtime linked statically)";
}

const CudaStatus& cuda_status() {
  static const CudaStatus status = [] {
    CudaStatus s;
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      cudaGetLastError();
      s.reason = "cudaGetDeviceCount failed: " + error_text(error);
    } else if (count < 1) {
      s.reason = "no CUDA device (cudaGetDeviceCount found 0 devices)";
    } else {
      s.device_count = count;
    }
    return s;
  }();
  return status;
}

void require_cuda_device(DLDevice device) {
  const CudaStatus& status = cuda_status();
  if (!status.usable())
    sy::fail(SY_ERR_UNAVAILABLE,
             "problem.device = " + sy::device_name(device) +
                 " but native's CUDA path cannot run on this machine: " + status.reason +
                 "; use CPU tensors (problem.device = cpu:0) here, or run where a GPU and its "
                 "driver are present");
  if (device.device_id < 0)
    sy::fail(SY_ERR_INVALID_ARGUMENT, "problem.device = " + sy::device_name(device) +
                                          " has a negative device id; expected cuda:0 to " +
                                          "cuda:" + std::to_string(status.device_count - 1));
  if (device.device_id >= status.device_count)
    sy::fail(SY_ERR_UNAVAILABLE,
             "problem.device = " + sy::device_name(device) + " does not exist: this machine has " +
                 std::to_string(status.device_count) + " CUDA device" +
                 (status.device_count == 1 ? "" : "s") + " (cuda:0 to cuda:" +
                 std::to_string(status.device_count - 1) + ")");
  const std::string& image = kernel_image_problem(device.device_id);
  if (!image.empty())
    sy::fail(SY_ERR_UNAVAILABLE, "problem.device = " + sy::device_name(device) + ": " + image);
}

void require_current_device(DLDevice device) {
  int current = -1;
  check(cudaGetDevice(&current), "cudaGetDevice");
  if (current == device.device_id) return;
  sy::fail(SY_ERR_INVALID_ARGUMENT,
           "problem.device = " + sy::device_name(device) +
               " but the calling thread's current CUDA device is cuda:" + std::to_string(current) +
               "; call cudaSetDevice(" + std::to_string(device.device_id) +
               ") (torch.cuda.set_device) first: native launches its kernels on the current "
               "device, which must hold the tensors and the stream");
}

void require_device_memory(const void* address, const char* name, DLDevice device) {
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, address);
  if (error == cudaSuccess && attributes.type == cudaMemoryTypeManaged) return;  // device-usable
  if (error == cudaSuccess && attributes.type == cudaMemoryTypeDevice &&
      attributes.device == device.device_id)
    return;
  // Refused: only now are the words put together.
  const std::string where = std::string(name) + " (" + pointer_text(address) + ")";
  const std::string label = sy::device_name(device);
  if (error != cudaSuccess) {
    cudaGetLastError();
    sy::fail(SY_ERR_INVALID_ARGUMENT, where + " is labelled " + label +
                                          " but CUDA does not know this address "
                                          "(cudaPointerGetAttributes: " +
                                          error_text(error) + "); pass memory of " + label);
  }
  if (attributes.type == cudaMemoryTypeDevice)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             where + " is labelled " + label + " but is memory of cuda:" +
                 std::to_string(attributes.device) +
                 "; label it with the device that holds it and make that device current");
  if (attributes.type == cudaMemoryTypeHost)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             where + " is labelled " + label +
                 " but is page-locked host memory (cudaMallocHost/cudaHostRegister); copy it "
                 "to the GPU (native takes kDLCPU or kDLCUDA tensors, not kDLCUDAHost)");
  sy::fail(SY_ERR_INVALID_ARGUMENT,
           where + " is labelled " + label +
               " but is ordinary host memory (not allocated by CUDA); copy it to the GPU, or "
               "label it cpu:0 and use the CPU path");
}

void require_device_tensor(const DLTensor* tensor, const char* name, DLDevice device) {
  if (tensor == nullptr) return;
  int64_t elements = 1;
  for (int d = 0; d < tensor->ndim; ++d) elements *= tensor->shape[d];
  if (elements == 0) return;
  require_device_memory(static_cast<const char*>(tensor->data) + tensor->byte_offset, name,
                        device);
}

}  // namespace switchyard::native::cuda
