// Device-pointer detection through the CUDA driver, found with dlopen(RTLD_NOLOAD) so that the
// core never loads, links or initialises CUDA itself (DESIGN.md §2).
#include "comm_cuda_pointer.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>

namespace switchyard::detail {
namespace {

// The few driver API values used here (cuda.h), spelled out because the core does not
// include CUDA headers. They are part of the driver's stable ABI.
using CuPointerGetAttribute = int (*)(void* data, int attribute, unsigned long long pointer);
constexpr int kCudaSuccess = 0;
constexpr int kAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttributeIsManaged = 8;   // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr unsigned kMemoryTypeDevice = 2;  // CU_MEMORYTYPE_DEVICE

std::atomic<CudaPointerClassifier> test_classifier{nullptr};
std::atomic<CuPointerGetAttribute> driver_query{nullptr};

// Finds cuPointerGetAttribute in an already-loaded driver. Once found, the handle is kept for
// the life of the process (the driver is never unloaded in practice); until then every call
// looks again, because the driver may be loaded after the first collective.
CuPointerGetAttribute find_driver_query() {
  CuPointerGetAttribute query = driver_query.load(std::memory_order_acquire);
  if (query != nullptr) return query;
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return nullptr;
  query = reinterpret_cast<CuPointerGetAttribute>(dlsym(driver, "cuPointerGetAttribute"));
  if (query == nullptr) {
    dlclose(driver);
    return nullptr;
  }
  driver_query.store(query, std::memory_order_release);
  return query;
}

}  // namespace

bool is_cuda_device_pointer(const void* pointer) {
  if (pointer == nullptr) return false;
  if (CudaPointerClassifier classifier = test_classifier.load(std::memory_order_acquire)) {
    return classifier(pointer);
  }
  CuPointerGetAttribute query = find_driver_query();
  if (query == nullptr) return false;
  const auto address = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(pointer));
  unsigned memory_type = 0;
  // Not CUDA memory at all (plain malloc): the driver answers an error, which means host.
  if (query(&memory_type, kAttributeMemoryType, address) != kCudaSuccess) return false;
  if (memory_type != kMemoryTypeDevice) return false;
  unsigned managed = 0;  // the driver writes a bool here; the rest stays zero
  if (query(&managed, kAttributeIsManaged, address) == kCudaSuccess && managed != 0) return false;
  return true;
}

void set_cuda_pointer_classifier_for_testing(CudaPointerClassifier classifier) {
  test_classifier.store(classifier, std::memory_order_release);
}

}  // namespace switchyard::detail
