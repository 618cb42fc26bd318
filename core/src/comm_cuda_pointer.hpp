// Tells CUDA device memory apart from host memory without linking CUDA: the core must run on
// machines with no driver, so it asks the driver only when the process has already loaded it.
#ifndef SWITCHYARD_CORE_COMM_CUDA_POINTER_HPP
#define SWITCHYARD_CORE_COMM_CUDA_POINTER_HPP

namespace switchyard::detail {

// True when `pointer` is CUDA device memory the CPU cannot dereference. Host, pinned-host and
// managed memory are false; so is everything when libcuda is not loaded in this process (then
// no device memory can exist). Thread-safe.
bool is_cuda_device_pointer(const void* pointer);

// For tests on machines without a GPU: replaces the driver query (nullptr restores it).
using CudaPointerClassifier = bool (*)(const void* pointer);
void set_cuda_pointer_classifier_for_testing(CudaPointerClassifier classifier);

}  // namespace switchyard::detail

#endif
