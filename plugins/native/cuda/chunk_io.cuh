// Loads and stores of one chunk (kChunk = 8 consecutive elements of a row, chunk_geometry.hpp)
// as fp32 registers: one 16-byte access for bfloat16/float16, two for float32 when the row is
// 16-byte aligned and the chunk whole; element by element (masked to the row) otherwise. Both
// paths give the same values, so the choice never changes a result. Elements past the end of
// the row load as 0 and are never stored.
#ifndef SWITCHYARD_NATIVE_CUDA_CHUNK_IO_CUH
#define SWITCHYARD_NATIVE_CUDA_CHUNK_IO_CUH

#include "chunk_geometry.hpp"
#include "device_math.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace switchyard::native::cuda {

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

// v rounded to T and back (exact for float).
template <class T>
__device__ __forceinline__ float round_through(float v) {
  return to_float(from_float<T>(v));
}

// Whole, aligned chunks as 16-byte accesses.
__device__ __forceinline__ void load8(const float* p, float (&v)[kChunk]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0];
  const float4 b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
  v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void store8(float* p, const float (&v)[kChunk]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// Two 16-bit values in one word, the lower address in the low half.
__device__ __forceinline__ void unpack2(uint32_t w, __nv_bfloat16, float& lo, float& hi) {
  lo = __uint_as_float(w << 16);
  hi = __uint_as_float(w & 0xffff0000u);
}
__device__ __forceinline__ void unpack2(uint32_t w, __half, float& lo, float& hi) {
  lo = __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)));
  hi = __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}
__device__ __forceinline__ uint32_t bits16(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
__device__ __forceinline__ uint32_t bits16(__half h) { return __half_as_ushort(h); }

template <class T>
__device__ __forceinline__ void load8(const T* p, float (&v)[kChunk]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  unpack2(u.x, T{}, v[0], v[1]);
  unpack2(u.y, T{}, v[2], v[3]);
  unpack2(u.z, T{}, v[4], v[5]);
  unpack2(u.w, T{}, v[6], v[7]);
}
template <class T>
__device__ __forceinline__ void store8(T* p, const float (&v)[kChunk]) {
  uint32_t w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k)
    w[k] = bits16(from_float<T>(v[2 * k])) | (bits16(from_float<T>(v[2 * k + 1])) << 16);
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

// Chunk c of a row of `columns` elements. `vector` says the row starts 16-byte aligned.
template <class T>
__device__ __forceinline__ void load_chunk(const T* row, int64_t c, int64_t columns, bool vector,
                                           float (&v)[kChunk]) {
  const int64_t first = c * kChunk;
  if (vector && first + kChunk <= columns) {
    load8(row + first, v);
    return;
  }
#pragma unroll
  for (int e = 0; e < kChunk; ++e) v[e] = first + e < columns ? to_float(row[first + e]) : 0.0f;
}

template <class T>
__device__ __forceinline__ void store_chunk(T* row, int64_t c, int64_t columns, bool vector,
                                            const float (&v)[kChunk]) {
  const int64_t first = c * kChunk;
  if (vector && first + kChunk <= columns) {
    store8(row + first, v);
    return;
  }
#pragma unroll
  for (int e = 0; e < kChunk; ++e)
    if (first + e < columns) row[first + e] = from_float<T>(v[e]);
}

// The same with the dtype known at run time only (a uniform branch per chunk).
__device__ __forceinline__ void load_chunk(const void* row, Dtype type, int64_t c,
                                           int64_t columns, bool vector, float (&v)[kChunk]) {
  switch (type) {
    case Dtype::F32: return load_chunk(static_cast<const float*>(row), c, columns, vector, v);
    case Dtype::BF16:
      return load_chunk(static_cast<const __nv_bfloat16*>(row), c, columns, vector, v);
    default: return load_chunk(static_cast<const __half*>(row), c, columns, vector, v);
  }
}
__device__ __forceinline__ void store_chunk(void* row, Dtype type, int64_t c, int64_t columns,
                                            bool vector, const float (&v)[kChunk]) {
  switch (type) {
    case Dtype::F32: return store_chunk(static_cast<float*>(row), c, columns, vector, v);
    case Dtype::BF16:
      return store_chunk(static_cast<__nv_bfloat16*>(row), c, columns, vector, v);
    default: return store_chunk(static_cast<__half*>(row), c, columns, vector, v);
  }
}
__device__ __forceinline__ float round_through(Dtype type, float v) {
  switch (type) {
    case Dtype::F32: return v;
    case Dtype::BF16: return round_through<__nv_bfloat16>(v);
    default: return round_through<__half>(v);
  }
}

}  // namespace switchyard::native::cuda

#endif
