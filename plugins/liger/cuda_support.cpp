#include "cuda_support.hpp"

#include <switchyard/plugin_helpers.hpp>

namespace switchyard::liger {
namespace {

sy_status status_of(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation:
      return SY_ERR_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorStubLibrary:
    case cudaErrorSystemNotReady:
    case cudaErrorInitializationError:
      return SY_ERR_UNAVAILABLE;
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidDevice:
      return SY_ERR_INVALID_ARGUMENT;
    default:
      return SY_ERR_INTERNAL;
  }
}

}  // namespace

std::string cuda_error_text(cudaError_t error) {
  const char* name = cudaGetErrorName(error);
  const char* text = cudaGetErrorString(error);
  return std::string(name != nullptr ? name : "cudaError") + " (" +
         (text != nullptr ? text : "no description") + ")";
}

void check_cuda(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return;
  sy::fail(status_of(error), what + " failed: " + cuda_error_text(error));
}

void require_usable_device() {
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) {
    (void)cudaGetLastError();
    const std::string forked =
        counted == cudaErrorInitializationError
            ? " (also the error of a process forked from one that had already initialised "
              "CUDA)"
            : "";
    sy::fail(SY_ERR_UNAVAILABLE,
             "no usable CUDA driver or device: cudaGetDeviceCount failed with " +
                 cuda_error_text(counted) + forked +
                 "; liger runs on NVIDIA GPUs of compute capability 9.0 or newer with a driver "
                 "for CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
                 std::to_string(CUDART_VERSION % 1000 / 10) +
                 " (its CUDA runtime is linked statically)");
  }
  if (count < 1)
    sy::fail(SY_ERR_UNAVAILABLE,
             "no CUDA device is visible (cudaGetDeviceCount = 0; check CUDA_VISIBLE_DEVICES)");
  std::string seen;
  for (int device = 0; device < count; ++device) {
    int major = 0, minor = 0;
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
               "cudaDeviceGetAttribute(compute capability)");
    check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
               "cudaDeviceGetAttribute(compute capability)");
    if (major >= kMinComputeMajor) return;
    seen += (seen.empty() ? "" : ", ") + std::string("cuda:") + std::to_string(device) + " is " +
            std::to_string(major) + "." + std::to_string(minor);
  }
  sy::fail(SY_ERR_UNAVAILABLE, "no CUDA device of compute capability 9.0 or newer (" + seen +
                                   "); this build of liger carries sm_90 code only");
}

int multiprocessor_count(int device) {
  int count = 0;
  check_cuda(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(cudaDevAttrMultiProcessorCount)");
  return count;
}

DeviceGuard::DeviceGuard(int device) {
  check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    switched_ = true;
  }
  (void)cudaGetLastError();
}

DeviceGuard::~DeviceGuard() {
  if (switched_) (void)cudaSetDevice(previous_);
}

}  // namespace switchyard::liger
