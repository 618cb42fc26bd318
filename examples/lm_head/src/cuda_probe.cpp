// Asks the CUDA driver, if there is one, how many devices it sees. The driver is opened with
// dlopen so that the demo links and runs on machines that have none.
#include <switchyard/lm_head/device.hpp>

#include <dlfcn.h>

#include <string>

namespace switchyard::lm_head {

std::string describe_cuda_devices(int* device_count) {
  *device_count = 0;
  // Kept loaded on purpose: unloading the driver after cuInit is not supported.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* why = dlerror();
    return std::string("no CUDA driver (libcuda.so.1 could not be loaded: ") +
           (why != nullptr ? why : "unknown reason") + ")";
  }
  using InitFn = int (*)(unsigned int);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  if (init == nullptr || count == nullptr) {
    return "a CUDA driver without cuInit/cuDeviceGetCount (not a usable libcuda.so.1)";
  }
  const int init_status = init(0);
  if (init_status != 0) {
    return "no usable CUDA device (cuInit failed with CUresult " + std::to_string(init_status) +
           (init_status == 100 ? ", CUDA_ERROR_NO_DEVICE" : "") + ")";
  }
  int devices = 0;
  if (count(&devices) != 0 || devices == 0) return "no CUDA device";
  *device_count = devices;
  return std::to_string(devices) + " CUDA device" + (devices == 1 ? "" : "s") + " visible";
}

}  // namespace switchyard::lm_head
