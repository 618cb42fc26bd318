// The host side of the native CUDA path's checks: CUDA errors as sy::Failure, whether CUDA can
// run here (and why not), and the device and memory of the tensors a call receives.
//
// How probe and supports divide the work (plugins/native/README.md, "CUDA"):
//   - probe() answers SY_OK on every machine, because the CPU path always runs; it logs what
//     the CUDA path can do here (cuda_status().describe()).
//   - supports() / forward() / backward() for a kDLCUDA problem answer SY_ERR_UNAVAILABLE with
//     the reason (cudaGetDeviceCount's error, "no CUDA device", a missing kernel image).
#ifndef SWITCHYARD_NATIVE_CUDA_CUDA_CHECK_HPP
#define SWITCHYARD_NATIVE_CUDA_CUDA_CHECK_HPP

#include <dlpack/dlpack.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace switchyard::native::cuda {

// "cudaErrorNoDevice (no CUDA-capable device is detected)".
std::string error_text(cudaError_t error);

// Throws sy::Failure for anything but cudaSuccess: "<what> failed: <error_text>". The status
// follows the error: OUT_OF_MEMORY, UNAVAILABLE (no device, driver, kernel image), INVALID_ARGUMENT
// (a stream or handle of the caller), INTERNAL otherwise. Nothing is allocated on success (the
// checks below too: calls allocate nothing on the host either, unless they fail).
void check(cudaError_t error, const char* what);

// What the CUDA path can use on this machine, asked once per process (cudaGetDeviceCount).
struct CudaStatus {
  int device_count = 0;
  std::string reason;  // why it cannot run; empty when device_count > 0
  bool usable() const { return device_count > 0; }
  // One line for the log: "CUDA path: 2 devices, kernels for sm_90" or
  // "CUDA path unavailable: ...; CPU tensors only".
  std::string describe() const;
};
const CudaStatus& cuda_status();

// The CUDA architectures the kernels were built for ("90"), and the toolkit ("13.0.88").
const char* built_architectures();
const char* built_toolkit();

// For supports/forward/backward of a kDLCUDA problem: SY_ERR_UNAVAILABLE with the reason when
// CUDA cannot run here, the device does not exist, or the kernels have no image for it.
void require_cuda_device(DLDevice device);

// The calling thread's current CUDA device must be `device` (kernels are launched there).
void require_current_device(DLDevice device);

// `address` (data + byte_offset of tensor `name`, or the workspace) must be device (or managed)
// memory of `device`: host memory labelled as CUDA is refused with a message naming it.
void require_device_memory(const void* address, const char* name, DLDevice device);
// The same for a tensor (nothing is checked when it is NULL or has no elements).
void require_device_tensor(const DLTensor* tensor, const char* name, DLDevice device);

}  // namespace switchyard::native::cuda

#endif
