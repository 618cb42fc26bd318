// The device-memory check of every tensor a call receives (cuda_support's
// require_device_memory on the tensor's first byte), skipping NULL and empty tensors.
#ifndef SWITCHYARD_TE_DEVICE_TENSORS_HPP
#define SWITCHYARD_TE_DEVICE_TENSORS_HPP

#include "cuda_support.hpp"
#include "tensor_checks.hpp"

#include <dlpack/dlpack.h>

#include <initializer_list>
#include <utility>

namespace switchyard::te {

inline void require_device_tensors(
    std::initializer_list<std::pair<const DLTensor*, const char*>> tensors, DLDevice device) {
  for (const auto& [tensor, name] : tensors) {
    if (tensor == nullptr) continue;
    int64_t elements = 1;
    for (int d = 0; d < tensor->ndim; ++d) elements *= tensor->shape[d];
    if (elements > 0) require_device_memory(first_byte(*tensor), name, device);
  }
}

}  // namespace switchyard::te

#endif
