// The CUDA runtime (linked statically, so the plugin carries its own and needs only the
// driver, which it opens lazily): device discovery for probe(), the current-device guard,
// kernel launches, and loading generated modules with cudaLibraryLoadData.
#ifndef SWITCHYARD_FUSED_CUDA_DEVICE_HPP
#define SWITCHYARD_FUSED_CUDA_DEVICE_HPP

#include "device_api.hpp"
#include "jit/engine.hpp"

#include <cstdint>
#include <string>

namespace switchyard::fused::cuda {

// Empty when at least one CUDA device is usable; otherwise why not (no driver, no device).
std::string unavailable_reason();

struct DeviceInfo {
  int arch = 0;  // major*10+minor
  int multiprocessors = 0;
  uint32_t driver_version = 0;
};

// Throws sy::Failure: SY_ERR_UNAVAILABLE when there is no such device.
DeviceInfo device_info(int device);

// Makes `device` current for the scope and restores the caller's device after, so a call
// never changes which device the caller's thread works on.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

class CudaDevice final : public Device {
 public:
  void launch(const void* kernel, LaunchShape shape, const void* args, const char* name,
              void* stream) override;
  void fill(void* device_pointer, int value, size_t bytes, void* stream) override;
  void read(void* host, const void* device_pointer, size_t bytes, void* stream) override;
};

class CudaModuleLoader final : public jit::ModuleLoader {
 public:
  std::shared_ptr<const jit::LoadedModule> load(std::string_view payload, jit::cache::PayloadKind kind,
                                                const std::vector<std::string>& kernel_names) override;
};

// "CUDA runtime 13.0 (static)".
std::string runtime_description();

}  // namespace switchyard::fused::cuda

#endif  // SWITCHYARD_FUSED_CUDA_DEVICE_HPP
