#include "tensor_rules.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <string>

namespace switchyard::apex {
namespace {

struct Extent {
  uintptr_t begin = 0;
  uintptr_t end = 0;  // one past the last byte; begin == end: empty
};

Extent extent_of(const DLTensor& t) {
  const int64_t element = (t.dtype.bits * t.dtype.lanes + 7) / 8;
  const int64_t rows = t.ndim == 2 ? t.shape[0] : 1;
  const int64_t columns = t.ndim == 2 ? t.shape[1] : t.shape[0];
  Extent e;
  e.begin = reinterpret_cast<uintptr_t>(address_of(t));
  e.end = e.begin;
  if (rows <= 0 || columns <= 0) return e;
  const int64_t stride = t.ndim == 2 ? row_stride_of(t) : columns;
  e.end = e.begin + static_cast<uintptr_t>(((rows - 1) * stride + columns) * element);
  return e;
}

bool intersect(const Extent& a, const Extent& b) {
  return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}

bool same_elements(const DLTensor& a, const DLTensor& b) {
  if (address_of(a) != address_of(b) || !sy::same(a.dtype, b.dtype) || a.ndim != b.ndim)
    return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return a.ndim != 2 || a.shape[0] <= 1 || row_stride_of(a) == row_stride_of(b);
}

}  // namespace

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

void require_same_or_disjoint(const DLTensor* output, const char* output_name,
                              const DLTensor* input, const char* input_name) {
  if (output == nullptr || input == nullptr) return;
  if (!intersect(extent_of(*output), extent_of(*input))) return;
  if (same_elements(*output, *input)) return;
  sy::fail(SY_ERR_INVALID_ARGUMENT,
           std::string(output_name) + " partly overlaps " + input_name +
               "; pass the very same tensor (same address, dtype, shape and strides) to work in "
               "place, or separate memory");
}

void require_disjoint(const DLTensor* a, const char* a_name, const DLTensor* b,
                      const char* b_name) {
  if (a == nullptr || b == nullptr) return;
  if (intersect(extent_of(*a), extent_of(*b)))
    sy::fail(SY_ERR_INVALID_ARGUMENT, std::string(a_name) + " overlaps " + b_name +
                                          "; each needs its own memory");
}

}  // namespace switchyard::apex
