// Device-side building blocks of the native CUDA kernels: dtype loads and single-rounding
// stores, label rules, and block reductions in a fixed order (so every result is bit-exact
// from run to run and depends only on its own row).
#ifndef SWITCHYARD_NATIVE_CUDA_DEVICE_MATH_CUH
#define SWITCHYARD_NATIVE_CUDA_DEVICE_MATH_CUH

#include "kernel_types.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace switchyard::native::cuda {

constexpr int kWarp = 32;

// ---- loads ----------------------------------------------------------------------------------

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

// Element k of a float32/bfloat16/float16 array, chosen at run time (a uniform branch).
__device__ __forceinline__ double load_real(const void* base, Dtype type, int64_t k) {
  switch (type) {
    case Dtype::F32: return static_cast<const float*>(base)[k];
    case Dtype::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[k]);
    default: return __half2float(static_cast<const __half*>(base)[k]);
  }
}

__device__ __forceinline__ int64_t load_label(const void* base, bool labels64, int64_t i) {
  return labels64 ? static_cast<const int64_t*>(base)[i]
                  : static_cast<int64_t>(static_cast<const int32_t*>(base)[i]);
}

// ---- stores that round once -----------------------------------------------------------------

// The float nearest to x with round-to-odd: exact values stay, inexact ones are truncated
// toward zero and get an odd last bit. Rounding that float to bfloat16/float16 (RNE) then
// equals one correct rounding of x (float has more than 2 x 11 + 2 bits).
__device__ __forceinline__ float round_to_odd(double x) {
  const float truncated = __double2float_rz(x);
  if (static_cast<double>(truncated) == x) return truncated;
  return __uint_as_float(__float_as_uint(truncated) | 1u);
}

__device__ __forceinline__ void store_as(float* p, double v) { *p = static_cast<float>(v); }
__device__ __forceinline__ void store_as(__nv_bfloat16* p, double v) {
  *p = __float2bfloat16_rn(round_to_odd(v));
}
__device__ __forceinline__ void store_as(__half* p, double v) {
  *p = __float2half_rn(round_to_odd(v));
}

// Stores v rounded once into element k of a run-time dtype array; returns the stored value.
__device__ __forceinline__ double store_real(void* base, Dtype type, int64_t k, double v) {
  switch (type) {
    case Dtype::F32: {
      float* p = static_cast<float*>(base) + k;
      store_as(p, v);
      return *p;
    }
    case Dtype::BF16: {
      __nv_bfloat16* p = static_cast<__nv_bfloat16*>(base) + k;
      store_as(p, v);
      return __bfloat162float(*p);
    }
    default: {
      __half* p = static_cast<__half*>(base) + k;
      store_as(p, v);
      return __half2float(*p);
    }
  }
}

// Row i of a matrix with a row stride in elements, as an untyped base for load_real/store_real.
__device__ __forceinline__ const void* row_of(const void* base, Dtype type, int64_t stride,
                                              int64_t i) {
  return static_cast<const char*>(base) + i * stride * dtype_bytes(type);
}
__device__ __forceinline__ void* row_of(void* base, Dtype type, int64_t stride, int64_t i) {
  return static_cast<char*>(base) + i * stride * dtype_bytes(type);
}

// ---- labels ---------------------------------------------------------------------------------

__device__ __forceinline__ bool is_ignored(const LabelRule& r, int64_t label) {
  return r.use_ignore_index && label == r.ignore_index;
}
// The local column of `label` on this rank, or -1 when another rank (or none) owns it.
__device__ __forceinline__ int64_t local_column(const LabelRule& r, int64_t label) {
  const int64_t column = label - r.vocab_start;
  return column >= 0 && column < r.vocab_local ? column : -1;
}

// ---- block reductions (fixed shape: the same tree for every call) ---------------------------

// Sum over the block of one double per thread; every thread gets the total. `shared` holds at
// least blockDim.x / 32 doubles. blockDim.x must be a multiple of 32.
__device__ __forceinline__ double block_sum(double v, double* shared) {
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  const int warps = blockDim.x / kWarp;
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  __syncthreads();  // the previous call's readers are done with `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? shared[lane] : 0.0;
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
      v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

// (value, index) pairs: the larger value wins; NaN beats every number (torch.argmax); equal
// values (and two NaNs) go to the lower index. Associative and commutative, so the result is
// the lowest index of the maximum whatever the reduction tree.
__device__ __forceinline__ bool beats(float a, int64_t ia, float b, int64_t ib) {
  const bool a_nan = isnan(a), b_nan = isnan(b);
  if (a_nan || b_nan) return a_nan && b_nan ? ia < ib : a_nan;
  if (a != b) return a > b;
  return ia < ib;
}

struct MaxAt {
  float value;
  int64_t index;
};

// Maximum and its lowest index over the block; every thread gets the result. `values` and
// `indices` hold at least blockDim.x / 32 entries each.
__device__ __forceinline__ MaxAt block_max_at(MaxAt m, float* values, int64_t* indices) {
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  const int warps = blockDim.x / kWarp;
  auto warp_reduce = [](MaxAt x) {
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      const float v = __shfl_down_sync(0xffffffffu, x.value, offset);
      const int64_t i = __shfl_down_sync(0xffffffffu, x.index, offset);
      if (beats(v, i, x.value, x.index)) x = MaxAt{v, i};
    }
    return x;
  };
  m = warp_reduce(m);
  __syncthreads();
  if (lane == 0) {
    values[warp] = m.value;
    indices[warp] = m.index;
  }
  __syncthreads();
  if (warp == 0) {
    m = lane < warps ? MaxAt{values[lane], indices[lane]} : MaxAt{-INFINITY, INT64_MAX};
    m = warp_reduce(m);
    if (lane == 0) {
      values[0] = m.value;
      indices[0] = m.index;
    }
  }
  __syncthreads();
  return MaxAt{values[0], indices[0]};
}

}  // namespace switchyard::native::cuda

#endif
