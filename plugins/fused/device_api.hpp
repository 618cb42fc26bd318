// What the host-side orchestration (ce_run, norm_run) needs from a device: launch a generated
// kernel, clear memory, read a few bytes back. The plugin implements it with the CUDA runtime
// (cuda_device.cpp); the tests with a CPU emulation of the generated kernels, so that the
// orchestration and the kernels run for real on a machine without a GPU.
#ifndef SWITCHYARD_FUSED_DEVICE_API_HPP
#define SWITCHYARD_FUSED_DEVICE_API_HPP

#include <cstddef>
#include <cstdint>

namespace switchyard::fused {

struct LaunchShape {
  uint32_t grid_x = 1;
  uint32_t grid_y = 1;
  uint32_t block = 1;
};

class Device {
 public:
  virtual ~Device() = default;
  // Enqueues kernel(args) on `stream`; `args` points at the kernel's argument struct (copied
  // by the call). `name` is for error messages. Throws sy::Failure.
  virtual void launch(const void* kernel, LaunchShape shape, const void* args, const char* name,
                      void* stream) = 0;
  // Enqueues a byte fill. Throws sy::Failure.
  virtual void fill(void* device_pointer, int value, size_t bytes, void* stream) = 0;
  // Copies device memory to the host once the work queued on `stream` has finished (waits).
  virtual void read(void* host, const void* device_pointer, size_t bytes, void* stream) = 0;
};

}  // namespace switchyard::fused

#endif  // SWITCHYARD_FUSED_DEVICE_API_HPP
