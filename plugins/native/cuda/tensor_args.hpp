// Validated DLTensors as the kernels' plain arguments (host side).
#ifndef SWITCHYARD_NATIVE_CUDA_TENSOR_ARGS_HPP
#define SWITCHYARD_NATIVE_CUDA_TENSOR_ARGS_HPP

#include "../row_io.hpp"
#include "chunk_geometry.hpp"
#include "kernel_types.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cstdint>

namespace switchyard::native::cuda {

inline Dtype dtype_of(DLDataType dtype) {
  switch (data_type(dtype)) {  // throws for a dtype validation should have refused
    case DataType::F32: return Dtype::F32;
    case DataType::BF16: return Dtype::BF16;
    case DataType::F16: return Dtype::F16;
  }
  return Dtype::F32;
}

// data + byte_offset (NULL stays NULL).
inline const void* data_of(const DLTensor* t) {
  return t == nullptr ? nullptr : sy::data_as<const void>(*t);
}
inline void* mutable_data_of(DLTensor* t) {
  return t == nullptr ? nullptr : sy::data_as<void>(*t);
}
template <class T>
const T* typed(const DLTensor* t) {
  return static_cast<const T*>(data_of(t));
}
template <class T>
T* mutable_typed(DLTensor* t) {
  return static_cast<T*>(mutable_data_of(t));
}

// Whether a vector's data starts 16-byte aligned (NULL: no).
inline bool vector_aligned(const void* data) {
  return data != nullptr && reinterpret_cast<uintptr_t>(data) % 16 == 0;
}

// 2-D tensors only (validated): row stride from strides[0] or the row length.
inline Matrix matrix_of(const DLTensor* t) {
  if (t == nullptr) return Matrix{};
  const Dtype type = dtype_of(t->dtype);
  const void* data = data_of(t);
  const int64_t stride = sy::row_stride(*t);
  return Matrix{data, stride, type,
                rows_16_byte_aligned(reinterpret_cast<uintptr_t>(data), stride, dtype_bytes(type))};
}
inline MutableMatrix mutable_matrix_of(DLTensor* t) {
  if (t == nullptr) return MutableMatrix{};
  const Dtype type = dtype_of(t->dtype);
  void* data = mutable_data_of(t);
  const int64_t stride = sy::row_stride(*t);
  return MutableMatrix{
      data, stride, type,
      rows_16_byte_aligned(reinterpret_cast<uintptr_t>(data), stride, dtype_bytes(type))};
}

// A raw workspace pointer rounded up to `alignment` (the caller's pointer need not be aligned;
// workspace_size includes the slack).
inline char* aligned_workspace(void* workspace, int64_t alignment) {
  const auto address = reinterpret_cast<uintptr_t>(workspace);
  const auto rounded = (address + static_cast<uintptr_t>(alignment) - 1) /
                       static_cast<uintptr_t>(alignment) * static_cast<uintptr_t>(alignment);
  return static_cast<char*>(workspace) + (rounded - address);
}

}  // namespace switchyard::native::cuda

#endif
