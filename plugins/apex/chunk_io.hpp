// Moving chunks of 8 consecutive elements between memory and fp32 registers. Compiled by nvcc
// for the kernels and by g++ for the CPU tests (which run the same per-thread code on host
// memory). With `vector` a chunk moves as 16-byte accesses (the caller checked alignment);
// without it, element by element — the same values either way.
#ifndef SWITCHYARD_APEX_CHUNK_IO_HPP
#define SWITCHYARD_APEX_CHUNK_IO_HPP

#include "kernel_types.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include <cstdint>
#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

namespace switchyard::apex {

// ---- bit moves ------------------------------------------------------------------------------

SY_APEX_HD float bits_as_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

SY_APEX_HD uint4 load16(const void* p) {
#if defined(__CUDA_ARCH__)
  return *static_cast<const uint4*>(p);
#else
  uint4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}

SY_APEX_HD void store16(void* p, uint4 v) {
#if defined(__CUDA_ARCH__)
  *static_cast<uint4*>(p) = v;
#else
  std::memcpy(p, &v, sizeof v);
#endif
}

// Correctly rounded 1/x (the same value on host and device).
SY_APEX_HD float reciprocal(float x) {
#if defined(__CUDA_ARCH__)
  return __frcp_rn(x);
#else
  return 1.0f / x;
#endif
}

SY_APEX_HD int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// ---- scalar conversions ---------------------------------------------------------------------

SY_APEX_HD float to_float(float v) { return v; }
SY_APEX_HD float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
SY_APEX_HD float to_float(__half v) { return __half2float(v); }

// 16-bit patterns, rounded to nearest even.
SY_APEX_HD uint32_t bits16_of(float v, const __nv_bfloat16*) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}
SY_APEX_HD uint32_t bits16_of(float v, const __half*) {
  return __half_as_ushort(__float2half_rn(v));
}
SY_APEX_HD float float_of_bits16(uint32_t bits, const __nv_bfloat16*) {
  return bits_as_float(bits << 16);
}
SY_APEX_HD float float_of_bits16(uint32_t bits, const __half*) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}

template <class T>
SY_APEX_HD void store_element(T* p, float v);
template <>
SY_APEX_HD void store_element(float* p, float v) {
  *p = v;
}
template <>
SY_APEX_HD void store_element(__nv_bfloat16* p, float v) {
  *p = __float2bfloat16_rn(v);
}
template <>
SY_APEX_HD void store_element(__half* p, float v) {
  *p = __float2half_rn(v);
}

// ---- packed chunks: 8 elements kept in their storage format (half the registers of fp32 for
// 16-bit data) ---------------------------------------------------------------------------------

template <class T>
struct Packed8;
template <>
struct Packed8<float> {
  uint4 lo, hi;  // elements 0-3, 4-7 as raw fp32 bits
};
template <>
struct Packed8<__nv_bfloat16> {
  uint4 bits;  // element 2k in the low half of word k, 2k + 1 in the high half
};
template <>
struct Packed8<__half> {
  uint4 bits;
};

SY_APEX_HD uint32_t word(const uint4& v, int k) {
  return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

SY_APEX_HD Packed8<float> load_packed(const float* p, bool vector) {
  Packed8<float> r;
  if (vector) {
    r.lo = load16(p);
    r.hi = load16(p + 4);
  } else {
    float v[8];
    SY_APEX_UNROLL
    for (int k = 0; k < 8; ++k) v[k] = p[k];
#if defined(__CUDA_ARCH__)
    r.lo = make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]),
                      __float_as_uint(v[3]));
    r.hi = make_uint4(__float_as_uint(v[4]), __float_as_uint(v[5]), __float_as_uint(v[6]),
                      __float_as_uint(v[7]));
#else
    std::memcpy(&r.lo, v, 16);
    std::memcpy(&r.hi, v + 4, 16);
#endif
  }
  return r;
}

template <class T>
SY_APEX_HD Packed8<T> load_packed16(const T* p, bool vector) {
  Packed8<T> r;
  if (vector) {
    r.bits = load16(p);
  } else {
    const unsigned short* q = reinterpret_cast<const unsigned short*>(p);
    r.bits.x = static_cast<uint32_t>(q[0]) | (static_cast<uint32_t>(q[1]) << 16);
    r.bits.y = static_cast<uint32_t>(q[2]) | (static_cast<uint32_t>(q[3]) << 16);
    r.bits.z = static_cast<uint32_t>(q[4]) | (static_cast<uint32_t>(q[5]) << 16);
    r.bits.w = static_cast<uint32_t>(q[6]) | (static_cast<uint32_t>(q[7]) << 16);
  }
  return r;
}
SY_APEX_HD Packed8<__nv_bfloat16> load_packed(const __nv_bfloat16* p, bool vector) {
  return load_packed16(p, vector);
}
SY_APEX_HD Packed8<__half> load_packed(const __half* p, bool vector) {
  return load_packed16(p, vector);
}

SY_APEX_HD void unpack(const Packed8<float>& r, float (&v)[8]) {
  SY_APEX_UNROLL
  for (int k = 0; k < 4; ++k) {
    v[k] = bits_as_float(word(r.lo, k));
    v[k + 4] = bits_as_float(word(r.hi, k));
  }
}

template <class T>
SY_APEX_HD void unpack16(const Packed8<T>& r, float (&v)[8]) {
  const T* tag = nullptr;
  SY_APEX_UNROLL
  for (int k = 0; k < 4; ++k) {
    const uint32_t w = word(r.bits, k);
    v[2 * k] = float_of_bits16(w & 0xffffu, tag);
    v[2 * k + 1] = float_of_bits16(w >> 16, tag);
  }
}
SY_APEX_HD void unpack(const Packed8<__nv_bfloat16>& r, float (&v)[8]) { unpack16(r, v); }
SY_APEX_HD void unpack(const Packed8<__half>& r, float (&v)[8]) { unpack16(r, v); }

// ---- chunks as fp32 -------------------------------------------------------------------------

// Elements [0, valid) of the chunk at p; the rest read as 0. `vector` requires valid == 8.
template <class T>
SY_APEX_HD void load_chunk(const T* p, bool vector, int valid, float (&v)[8]) {
  if (vector) {
    unpack(load_packed(p, true), v);
    return;
  }
  SY_APEX_UNROLL
  for (int k = 0; k < 8; ++k) v[k] = k < valid ? to_float(p[k]) : 0.0f;
}

// Stores elements [0, valid) rounded once to T. `vector` requires valid == 8.
SY_APEX_HD void store_chunk(float* p, bool vector, int valid, const float (&v)[8]) {
  if (vector) {
    uint4 lo, hi;
#if defined(__CUDA_ARCH__)
    lo = make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]),
                    __float_as_uint(v[3]));
    hi = make_uint4(__float_as_uint(v[4]), __float_as_uint(v[5]), __float_as_uint(v[6]),
                    __float_as_uint(v[7]));
#else
    std::memcpy(&lo, v, 16);
    std::memcpy(&hi, v + 4, 16);
#endif
    store16(p, lo);
    store16(p + 4, hi);
    return;
  }
  SY_APEX_UNROLL
  for (int k = 0; k < 8; ++k)
    if (k < valid) p[k] = v[k];
}

template <class T>
SY_APEX_HD void store_chunk16(T* p, bool vector, int valid, const float (&v)[8]) {
  const T* tag = nullptr;
  if (vector) {
    uint4 bits;
    bits.x = bits16_of(v[0], tag) | (bits16_of(v[1], tag) << 16);
    bits.y = bits16_of(v[2], tag) | (bits16_of(v[3], tag) << 16);
    bits.z = bits16_of(v[4], tag) | (bits16_of(v[5], tag) << 16);
    bits.w = bits16_of(v[6], tag) | (bits16_of(v[7], tag) << 16);
    store16(p, bits);
    return;
  }
  SY_APEX_UNROLL
  for (int k = 0; k < 8; ++k)
    if (k < valid) store_element(p + k, v[k]);
}
SY_APEX_HD void store_chunk(__nv_bfloat16* p, bool vector, int valid, const float (&v)[8]) {
  store_chunk16(p, vector, valid, v);
}
SY_APEX_HD void store_chunk(__half* p, bool vector, int valid, const float (&v)[8]) {
  store_chunk16(p, vector, valid, v);
}

// A chunk of a vector whose dtype is known only at run time (γ, β: a uniform branch).
SY_APEX_HD void load_chunk_of(const void* base, Dtype dtype, int64_t offset, bool vector,
                              int valid, float (&v)[8]) {
  switch (dtype) {
    case Dtype::F32:
      load_chunk(static_cast<const float*>(base) + offset, vector, valid, v);
      break;
    case Dtype::BF16:
      load_chunk(static_cast<const __nv_bfloat16*>(base) + offset, vector, valid, v);
      break;
    default:
      load_chunk(static_cast<const __half*>(base) + offset, vector, valid, v);
      break;
  }
}

// γ_eff of the chunk: γ, 1 + γ (added in fp32) with zero-centred γ, or 1 without a weight.
SY_APEX_HD void load_gamma(const void* weight, Dtype dtype, bool zero_centered, int64_t offset,
                           bool vector, int valid, float (&g)[8]) {
  if (weight == nullptr) {
    SY_APEX_UNROLL
    for (int k = 0; k < 8; ++k) g[k] = 1.0f;
    return;
  }
  load_chunk_of(weight, dtype, offset, vector, valid, g);
  if (zero_centered) {
    SY_APEX_UNROLL
    for (int k = 0; k < 8; ++k) g[k] += 1.0f;
  }
}

// β of the chunk, or 0 without a bias.
SY_APEX_HD void load_beta(const void* bias, Dtype dtype, int64_t offset, bool vector, int valid,
                          float (&b)[8]) {
  if (bias == nullptr) {
    SY_APEX_UNROLL
    for (int k = 0; k < 8; ++k) b[k] = 0.0f;
    return;
  }
  load_chunk_of(bias, dtype, offset, vector, valid, b);
}

}  // namespace switchyard::apex

#endif
