// Where the LM head's buffers live and its kernels run. The CPU is the only device with an
// implementation today; a CUDA device is one more subclass (allocation, copies, Kernels) and
// nothing in the model, optimizer or trainer has to change.
#ifndef SWITCHYARD_LM_HEAD_DEVICE_HPP
#define SWITCHYARD_LM_HEAD_DEVICE_HPP

#include <switchyard/lm_head/kernels.hpp>

#include <dlpack/dlpack.h>

#include <cstddef>
#include <memory>
#include <string>

namespace switchyard::lm_head {

class Device {
 public:
  virtual ~Device() = default;
  virtual DLDevice dl_device() const = 0;
  virtual std::string name() const = 0;  // "cpu", "cuda:0"
  // Zero-filled device memory, freed when the last owner lets go.
  virtual std::shared_ptr<void> allocate(size_t bytes) const = 0;
  virtual void copy_from_host(void* device_dst, const void* host_src, size_t bytes) const = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, size_t bytes) const = 0;
  virtual const Kernels& kernels() const = 0;
  // Handed to the plugins with every call (a cudaStream_t on CUDA; NULL on the CPU).
  virtual void* stream() const { return nullptr; }
};

// A parsed --device value.
struct DeviceRequest {
  DLDeviceType type = kDLCPU;
  int32_t index = 0;
  std::string text;  // as the user wrote it
};

// "cpu", "cuda" or "cuda:<index>". Throws switchyard::Error(SY_ERR_INVALID_ARGUMENT).
DeviceRequest parse_device(const std::string& text);

// The device a rank computes on. `threads` is the number of CPU threads its kernels may use.
// Throws switchyard::Error(SY_ERR_UNAVAILABLE) with the reason when the device cannot be
// used here (today: any CUDA device).
std::unique_ptr<Device> open_device(const DeviceRequest& request, int threads);

// A CPU device whose kernels use up to `threads` threads.
std::unique_ptr<Device> make_cpu_device(int threads);

// One sentence on the CUDA devices this process can see ("no CUDA driver: ...",
// "2 CUDA devices"); reads the driver only through dlopen, so it never fails to load.
std::string describe_cuda_devices(int* device_count);

}  // namespace switchyard::lm_head

#endif
