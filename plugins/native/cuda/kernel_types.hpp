// Plain parameter types shared by the host side (g++) and the kernels (nvcc) of the native
// CUDA path. No CUDA headers: the host files that include this stay ordinary C++.
#ifndef SWITCHYARD_NATIVE_CUDA_KERNEL_TYPES_HPP
#define SWITCHYARD_NATIVE_CUDA_KERNEL_TYPES_HPP

#include <cstdint>

#if defined(__CUDACC__)
#define SY_NATIVE_HOST_DEVICE __host__ __device__
#else
#define SY_NATIVE_HOST_DEVICE
#endif

namespace switchyard::native::cuda {

// The data dtypes of the ABI (float32, bfloat16, float16).
enum class Dtype : int32_t { F32 = 0, BF16 = 1, F16 = 2 };

SY_NATIVE_HOST_DEVICE inline int64_t dtype_bytes(Dtype type) {
  return type == Dtype::F32 ? 4 : 2;
}

// Which rows count and which rank owns a label (docs/semantics.md).
struct LabelRule {
  int64_t vocab_start = 0;
  int64_t vocab_local = 0;
  int64_t vocab_size = 0;
  int64_t ignore_index = 0;
  bool use_ignore_index = false;  // SY_CE_IGNORE_INDEX
  bool labels64 = true;           // int64 labels (else int32)
};

// The target distribution q = (1 - s) onehot + s / V, as the gradient kernels use it.
struct Smoothing {
  double weight = 0;   // s
  double uniform = 0;  // s / V
  // q at the target column, (1 - s) + s / V, and elsewhere, s / V, rounded to fp32 once on
  // the host (the CUDA gradients are fp32).
  float q_target = 1.0f;
  float q_other = 0.0f;
};

// A matrix argument: element (i, j) is at data + i * row_stride + j (in elements).
// vector_rows: every row starts 16-byte aligned (chunk_geometry.hpp), so whole chunks of a row
// may move as 16-byte accesses.
struct Matrix {
  const void* data = nullptr;
  int64_t row_stride = 0;
  Dtype type = Dtype::F32;
  bool vector_rows = false;
};
struct MutableMatrix {
  void* data = nullptr;
  int64_t row_stride = 0;
  Dtype type = Dtype::F32;
  bool vector_rows = false;
};

}  // namespace switchyard::native::cuda

#endif
