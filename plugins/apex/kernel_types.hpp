// Plain types shared by the host side (g++), the kernels (nvcc) and the CPU tests of apex.
// No CUDA headers here: the host files that include this stay ordinary C++.
#ifndef SWITCHYARD_APEX_KERNEL_TYPES_HPP
#define SWITCHYARD_APEX_KERNEL_TYPES_HPP

#include <cstdint>

// Functions the kernels run per thread and the CPU tests run per emulated thread.
#if defined(__CUDACC__)
#define SY_APEX_HD __host__ __device__ __forceinline__
#else
#define SY_APEX_HD inline
#endif
// Unrolled in device code (register arrays must be indexed by constants); the host compilers
// (g++, nvcc's host pass) see no pragma.
#if defined(__CUDA_ARCH__)
#define SY_APEX_UNROLL _Pragma("unroll")
#else
#define SY_APEX_UNROLL
#endif

namespace switchyard::apex {

// The data dtypes of the ABI.
enum class Dtype : int32_t { F32 = 0, BF16 = 1, F16 = 2 };

enum class NormKind : int32_t { Layer = 0, Rms = 1, L2 = 2 };

// Everything a forward kernel reads. Strides are in elements; rows are `hidden` long.
struct ForwardParams {
  int64_t rows = 0;
  int64_t hidden = 0;
  float eps = 0;
  NormKind kind = NormKind::Layer;
  bool zero_centered_gamma = false;
  // Every [N, H] row, weight and bias starts 16-byte aligned and hidden % 8 == 0: chunks of
  // 8 elements may be moved as 16-byte vectors. It changes how memory is accessed, never
  // which element a thread handles nor the order of any arithmetic.
  bool vector_access = false;
  Dtype x_dtype = Dtype::F32;
  Dtype y_dtype = Dtype::F32;
  Dtype weight_dtype = Dtype::F32;
  const void* x = nullptr;
  int64_t x_stride = 0;
  void* y = nullptr;
  int64_t y_stride = 0;
  const void* weight = nullptr;  // gamma [H]; NULL for L2Norm
  const void* bias = nullptr;    // beta [H]; optional, LayerNorm only
  float* mean = nullptr;         // [N]; LayerNorm only
  float* rstd = nullptr;         // [N]
};

// Everything the backward kernels read. dγ/dβ are summed per chunk of `rows_per_chunk`
// consecutive rows into `partial_*` ([chunks, H] fp32 in the workspace), then over chunks.
struct BackwardParams {
  int64_t rows = 0;
  int64_t hidden = 0;
  NormKind kind = NormKind::Layer;
  bool zero_centered_gamma = false;
  bool memory_efficient = false;  // x_or_y holds y: x̂ = (y − β) / γ_eff
  bool vector_access = false;     // as ForwardParams::vector_access, for dy, x_or_y, dx, γ, β
  Dtype x_dtype = Dtype::F32;     // dx
  Dtype y_dtype = Dtype::F32;     // dy (and x_or_y when memory_efficient)
  Dtype weight_dtype = Dtype::F32;
  Dtype grad_weight_dtype = Dtype::F32;
  const void* dy = nullptr;
  int64_t dy_stride = 0;
  const void* x_or_y = nullptr;
  int64_t x_or_y_stride = 0;
  const void* weight = nullptr;  // NULL for L2Norm
  const void* bias = nullptr;    // used by memory-efficient LayerNorm; NULL means β = 0
  const float* mean = nullptr;   // LayerNorm, not memory-efficient
  const float* rstd = nullptr;
  void* dx = nullptr;
  int64_t dx_stride = 0;
  void* dweight = nullptr;
  void* dbias = nullptr;
  bool accumulate = false;             // dweight/dbias are fp32 and summed into
  float* partial_gamma = nullptr;      // NULL when dweight is not wanted
  float* partial_beta = nullptr;       // NULL when dbias is not wanted
  int64_t rows_per_chunk = 1;
  int64_t chunks = 0;
};

// How wide a launch may be: the persistent kernels use at most
// max(1, sm_count − sm_margin) × (blocks that fit one SM) blocks.
struct LaunchConfig {
  void* stream = nullptr;  // cudaStream_t
  int sm_count = 1;
  int sm_margin = 0;
};

}  // namespace switchyard::apex

#endif
