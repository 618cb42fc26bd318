#include "cuda_device.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

namespace switchyard::fused::cuda {
namespace {

std::string error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

sy_status status_of(cudaError_t error) {
  return error == cudaErrorMemoryAllocation ? SY_ERR_OUT_OF_MEMORY : SY_ERR_INTERNAL;
}

[[noreturn]] void fail(cudaError_t error, const std::string& what) {
  (void)cudaGetLastError();  // a non-sticky error must not fail the caller's next CUDA call
  sy::fail(status_of(error), what + " failed: " + error_text(error));
}

void check(cudaError_t error, const std::string& what) {
  if (error != cudaSuccess) fail(error, what);
}

// A loaded library. Never unloaded: kernels may still be queued when the plugin is done with
// it, and the CUDA context releases it with everything else.
struct CudaModule final : jit::LoadedModule {
  cudaLibrary_t library = nullptr;
};

}  // namespace

std::string runtime_description() {
  return "CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." +
         std::to_string((CUDART_VERSION % 1000) / 10) + " (linked statically)";
}

std::string unavailable_reason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaSuccess && count > 0) return {};
  (void)cudaGetLastError();
  if (error == cudaSuccess || error == cudaErrorNoDevice)
    return "no CUDA GPU is visible to this process (cudaGetDeviceCount found none; check the "
           "GPU, its driver and CUDA_VISIBLE_DEVICES)";
  if (error == cudaErrorInsufficientDriver)
    return "no usable NVIDIA driver: cudaGetDeviceCount returned cudaErrorInsufficientDriver "
           "(the driver is not installed, or is older than the " + runtime_description() +
           " this plugin carries)";
  return "no usable CUDA device: cudaGetDeviceCount returned " + error_text(error);
}

DeviceInfo device_info(int device) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || device < 0 || device >= count) {
    (void)cudaGetLastError();
    const std::string reason = unavailable_reason();
    sy::fail(SY_ERR_UNAVAILABLE, "problem.device = cuda:" + std::to_string(device) + " is not usable: " +
                                     (reason.empty() ? "this process sees " + std::to_string(count) +
                                                           " CUDA device(s)"
                                                     : reason));
  }
  DeviceInfo info;
  int major = 0, minor = 0, driver = 0;
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
        "cudaDeviceGetAttribute(compute capability)");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
        "cudaDeviceGetAttribute(compute capability)");
  check(cudaDeviceGetAttribute(&info.multiprocessors, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute(multiprocessors)");
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  info.arch = major * 10 + minor;
  info.driver_version = static_cast<uint32_t>(driver);
  return info;
}

DeviceScope::DeviceScope(int device) {
  int current = 0;
  check(cudaGetDevice(&current), "cudaGetDevice");
  if (current != device) {
    check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    previous_ = current;
  }
}

DeviceScope::~DeviceScope() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

void CudaDevice::launch(const void* kernel, LaunchShape shape, const void* args, const char* name,
                        void* stream) {
  void* parameters[] = {const_cast<void*>(args)};
  const cudaError_t error =
      cudaLaunchKernel(kernel, dim3(shape.grid_x, shape.grid_y, 1), dim3(shape.block, 1, 1),
                       parameters, 0, static_cast<cudaStream_t>(stream));
  if (error != cudaSuccess)
    fail(error, std::string("launching ") + name + " (grid " + std::to_string(shape.grid_x) + " x " +
                    std::to_string(shape.grid_y) + ", block " + std::to_string(shape.block) + ")");
}

void CudaDevice::fill(void* device_pointer, int value, size_t bytes, void* stream) {
  check(cudaMemsetAsync(device_pointer, value, bytes, static_cast<cudaStream_t>(stream)),
        "cudaMemsetAsync of the workspace");
}

void CudaDevice::read(void* host, const void* device_pointer, size_t bytes, void* stream) {
  check(cudaMemcpyAsync(host, device_pointer, bytes, cudaMemcpyDeviceToHost,
                        static_cast<cudaStream_t>(stream)),
        "cudaMemcpyAsync to the host");
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

std::shared_ptr<const jit::LoadedModule> CudaModuleLoader::load(
    std::string_view payload, jit::cache::PayloadKind kind,
    const std::vector<std::string>& kernel_names) {
  // The payload sits at an arbitrary offset of the cache file; the loader gets an 8-byte
  // aligned copy (an ELF image is read with aligned accesses).
  std::vector<uint64_t> image((payload.size() + 7) / 8 + 1, 0);
  std::memcpy(image.data(), payload.data(), payload.size());
  auto module = std::make_shared<CudaModule>();
  const cudaError_t error =
      cudaLibraryLoadData(&module->library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (error != cudaSuccess)
    fail(error, std::string("cudaLibraryLoadData of the generated ") + jit::cache::payload_kind_name(kind) +
                    " (" + std::to_string(payload.size()) + " bytes)");
  for (const std::string& name : kernel_names) {
    cudaKernel_t kernel = nullptr;
    check(cudaLibraryGetKernel(&kernel, module->library, name.c_str()),
          "cudaLibraryGetKernel(" + name + ")");
    module->kernels.push_back(reinterpret_cast<const void*>(kernel));
  }
  return module;
}

}  // namespace switchyard::fused::cuda
