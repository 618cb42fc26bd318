// Where the LM head's buffers live and its kernels run: the CPU (cpu_kernels.cpp) or one CUDA
// GPU (cuda/). The model, optimizer and trainer only talk to this interface.
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
  // Handed to the plugins with every call (a cudaStream_t on CUDA; NULL on the CPU). Kernels
  // and plugins are enqueued on it; copies and Kernels::mean wait for it.
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

// The device a rank computes on. `threads` is the number of CPU threads its kernels may use
// (the CPU only). Throws switchyard::Error(SY_ERR_UNAVAILABLE) with the reason when the
// device cannot be used here: no CUDA driver or device, no such index, a build without CUDA.
std::unique_ptr<Device> open_device(const DeviceRequest& request, int threads);

// A CPU device whose kernels use up to `threads` threads.
std::unique_ptr<Device> make_cpu_device(int threads);

// One sentence on the CUDA devices this process can see ("no CUDA driver: ...",
// "2 CUDA devices"); reads the driver only through dlopen, so it never fails to load.
std::string describe_cuda_devices(int* device_count);

}  // namespace switchyard::lm_head

#endif
