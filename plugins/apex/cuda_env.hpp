// The host side's view of CUDA: whether apex can run here (and why not), CUDA errors as
// sy::Failure, the device a call runs on, and whether a tensor's memory is really on it.
#ifndef SWITCHYARD_APEX_CUDA_ENV_HPP
#define SWITCHYARD_APEX_CUDA_ENV_HPP

#include <dlpack/dlpack.h>
#include <switchyard/abi.h>

#include <string>

namespace switchyard::apex {

// "cudaErrorNoDevice (no CUDA-capable device is detected)".
std::string error_text(int cuda_error);

// The status a CUDA error maps to: UNAVAILABLE (no device, driver, kernel image),
// OUT_OF_MEMORY, INVALID_ARGUMENT (a bad stream or value of the caller), INTERNAL otherwise.
sy_status status_of(int cuda_error);

// Throws sy::Failure "apex: <what> failed: <error_text>" unless cuda_error is cudaSuccess.
void check_cuda(int cuda_error, const std::string& what);

// Why apex cannot run on this machine ("" when at least device 0 has devices and a kernel
// image), asked once per process.
const std::string& unavailable_reason();

// For supports/forward/backward: SY_ERR_UNAVAILABLE with the reason when CUDA cannot run
// here, `device` does not exist, or the kernels have no image for it.
void require_device(DLDevice device);

// Makes `device` current for the lifetime of the scope (kernels launch on the current device)
// and restores the caller's device afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

// Streaming multiprocessors of `device` (asked once per device).
int sm_count(int device);

// Refuses (INVALID_ARGUMENT, naming `name`) an address that is not device or managed memory
// of `device`. Nothing is checked for NULL or empty tensors.
void require_device_memory(const void* address, const char* name, DLDevice device);
void require_device_tensor(const DLTensor* tensor, const char* name, DLDevice device);

}  // namespace switchyard::apex

#endif
