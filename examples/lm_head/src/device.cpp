// Devices: parsing --device, the CPU device, and opening a CUDA one (cuda/cuda_device.cpp).
#include <switchyard/lm_head/device.hpp>

#include "cpu_kernels.hpp"
#include "cuda/cuda_device.hpp"

#include <switchyard/switchyard.hpp>

#include <cstdlib>
#include <cstring>
#include <new>

namespace switchyard::lm_head {
namespace {

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(int threads) : kernels_(threads) {}

  DLDevice dl_device() const override { return DLDevice{kDLCPU, 0}; }
  std::string name() const override { return "cpu"; }

  std::shared_ptr<void> allocate(size_t bytes) const override {
    // 64-byte alignment keeps rows on cache lines; aligned_alloc wants a multiple of it.
    const size_t rounded = ((bytes + 63) / 64) * 64;
    void* memory = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (memory == nullptr) throw std::bad_alloc();
    std::memset(memory, 0, rounded == 0 ? 64 : rounded);
    return std::shared_ptr<void>(memory, [](void* p) { std::free(p); });
  }
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) const override {
    if (bytes != 0) std::memcpy(device_dst, host_src, bytes);
  }
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) const override {
    if (bytes != 0) std::memcpy(host_dst, device_src, bytes);
  }
  const Kernels& kernels() const override { return kernels_; }

 private:
  CpuKernels kernels_;
};

}  // namespace

DeviceRequest parse_device(const std::string& text) {
  DeviceRequest request;
  request.text = text;
  if (text == "cpu") return request;
  if (text == "cuda" || text.rfind("cuda:", 0) == 0) {
    request.type = kDLCUDA;
    if (text.size() > 5) {
      const std::string index = text.substr(5);
      char* end = nullptr;
      const long value = std::strtol(index.c_str(), &end, 10);
      if (index.empty() || *end != '\0' || value < 0 || value > 1024) {
        throw Error(SY_ERR_INVALID_ARGUMENT,
                    "--device " + text + ": expected cuda:<index> with a device index >= 0, "
                    "got '" + index + "'.");
      }
      request.index = static_cast<int32_t>(value);
    }
    return request;
  }
  throw Error(SY_ERR_INVALID_ARGUMENT,
              "--device " + text + ": expected 'cpu', 'cuda' or 'cuda:<index>'.");
}

std::unique_ptr<Device> make_cpu_device(int threads) {
  return std::make_unique<CpuDevice>(threads);
}

std::unique_ptr<Device> open_device(const DeviceRequest& request, int threads) {
  if (request.type == kDLCPU) return make_cpu_device(threads);
  return make_cuda_device(request.index);
}

}  // namespace switchyard::lm_head
