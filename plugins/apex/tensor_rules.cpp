#include "tensor_rules.hpp"

#include <switchyard/plugin_helpers.hpp>

namespace switchyard::apex {

const void* address_of(const DLTensor& tensor) {
  return static_cast<const char*>(tensor.data) + tensor.byte_offset;
}
void* address_of(DLTensor& tensor) { return static_cast<char*>(tensor.data) + tensor.byte_offset; }

int64_t row_stride_of(const DLTensor& tensor) {
  return tensor.strides != nullptr ? tensor.strides[0] : tensor.shape[1];
}

bool allows_16_byte_access(const DLTensor* tensor) {
  if (tensor == nullptr) return true;
  if (reinterpret_cast<uintptr_t>(address_of(*tensor)) % 16 != 0) return false;
  if (tensor->ndim == 2 && tensor->shape[0] > 1) {
    const int64_t row_bytes = row_stride_of(*tensor) * (tensor->dtype.bits / 8);
    if (row_bytes % 16 != 0) return false;
  }
  return true;
}

}  // namespace switchyard::apex
