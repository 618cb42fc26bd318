// CUDA runtime errors as switchyard::Error, with the call, the device and CUDA's own words.
#ifndef SWITCHYARD_LM_HEAD_CUDA_CHECK_HPP
#define SWITCHYARD_LM_HEAD_CUDA_CHECK_HPP

#include <switchyard/switchyard.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace switchyard::lm_head {

inline sy_status status_of(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation: return SY_ERR_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return SY_ERR_UNAVAILABLE;
    default: return SY_ERR_INTERNAL;
  }
}

// Throws when `error` is not cudaSuccess: "cuda:0: cudaMalloc (4096 bytes) failed: out of
// memory (cudaErrorMemoryAllocation)".
inline void cuda_check(cudaError_t error, int32_t device, const std::string& what) {
  if (error == cudaSuccess) return;
  throw Error(status_of(error), "cuda:" + std::to_string(device) + ": " + what + " failed: " +
                                    cudaGetErrorString(error) + " (" + cudaGetErrorName(error) +
                                    ")");
}

}  // namespace switchyard::lm_head

#endif
