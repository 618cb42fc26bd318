// The host side of te's CUDA use: CUDA errors as sy::Failure, probe(), the current device,
// cached device properties and occupancy, and device-memory checks of the caller's pointers.
#ifndef SWITCHYARD_TE_CUDA_SUPPORT_HPP
#define SWITCHYARD_TE_CUDA_SUPPORT_HPP

#include <switchyard/abi.h>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace switchyard::te {

// "cudaErrorNoDevice (no CUDA-capable device is detected)".
std::string cuda_error_text(cudaError_t error);

// The sy_status a CUDA error stands for: OUT_OF_MEMORY, UNAVAILABLE (no device, driver,
// kernel image for this GPU), INTERNAL otherwise.
sy_status status_of(cudaError_t error);

// Throws sy::Failure(status_of(error), "te: <what> failed: <cuda_error_text>") unless success.
// (The const char* form builds no string unless the call failed: launches use it.)
void check_cuda(cudaError_t error, const char* what);
void check_cuda(cudaError_t error, const std::string& what);

// The plugin's probe: SY_OK when a CUDA device of compute capability >= 9.0 is present,
// else SY_ERR_UNAVAILABLE with the reason (asked again on every call: cheap after the first).
sy_status probe_cuda(std::string* reason);

struct DeviceInfo {
  int multiprocessors = 0;
  int max_shared_per_block_optin = 0;
  int shared_per_multiprocessor = 0;
  int reserved_shared_per_block = 0;  // what the driver keeps of a multiprocessor's per block
  int major = 0;
  int minor = 0;
};

// Properties of `device`, asked once per device and cached. Throws UNAVAILABLE for a device
// that does not exist or is older than sm_90 (te's kernels are built for compute 9.0).
DeviceInfo device_info(int device);

// The static shared memory of `kernel` (its __shared__ variables), asked once and cached.
int static_shared_bytes(const void* kernel);

// Blocks of `kernel` that fit one multiprocessor with `threads` threads and `shared_bytes`
// dynamic shared memory (cached per kernel, block, memory and device); at least 1.
int blocks_per_multiprocessor(const void* kernel, int threads, std::size_t shared_bytes,
                              int device);

// Lets `kernel` take all the dynamic shared memory a block may opt into on `device` (the
// default is 48 KiB less its static shared memory), once per device; `raised` is the kernel's
// own record of the devices done (a static of its instantiation: one bit per device id < 64).
void allow_all_shared(const void* kernel, int device, const char* name,
                      std::atomic<std::uint64_t>& raised);

// Makes `device` current for the lifetime of the guard (the kernels are launched there, on
// the caller's stream) and restores the caller's device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  int device_ = -1;
};

// `address` (the first byte of tensor `name`, or the workspace) must be device or managed
// memory of `device`; host memory labelled as CUDA is refused (INVALID_ARGUMENT) before a
// kernel could fault on it. NULL is not checked.
void require_device_memory(const void* address, const char* name, DLDevice device);

// The launch attribute of a programmatic dependent launch: the kernel may be scheduled while
// the one ahead of it on the stream still runs (row_claims.hpp says what for).
inline cudaLaunchAttribute programmatic_serialization() {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}

}  // namespace switchyard::te

#endif
