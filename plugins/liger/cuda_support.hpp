// The host side of the liger plugin's CUDA use: whether a GPU can run the kernels here (probe),
// CUDA errors as sy::Failure with the status they deserve, and the current-device guard every
// call runs under. The CUDA runtime is linked statically: the plugin loads on machines without
// a driver and says why it cannot run there.
#ifndef SWITCHYARD_LIGER_CUDA_SUPPORT_HPP
#define SWITCHYARD_LIGER_CUDA_SUPPORT_HPP

#include <cuda_runtime_api.h>

#include <string>

namespace switchyard::liger {

// Oldest compute capability the embedded code runs on (built for sm_90).
constexpr int kMinComputeMajor = 9;

// "cudaErrorNoDevice (no CUDA-capable device is detected)".
std::string cuda_error_text(cudaError_t error);

// Throws sy::Failure for anything but cudaSuccess: "<what> failed: <error text>". Status:
// OUT_OF_MEMORY, UNAVAILABLE (no driver, device or kernel image), INVALID_ARGUMENT (a stream
// or device the caller passed), INTERNAL otherwise.
void check_cuda(cudaError_t error, const std::string& what);

// Throws SY_ERR_UNAVAILABLE with the reason unless a device of compute capability >= 9.0 is
// visible.
void require_usable_device();

// The SM count of `device` (sizes the persistent grids of the norm ring kernels); throws as
// check_cuda.
int multiprocessor_count(int device);

// Makes `device` current for the scope of a call and restores the previous one. Clears a
// pending (non-sticky) error of an earlier call so that launch checks report this call's own.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace switchyard::liger

#endif
