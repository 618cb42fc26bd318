#include "source_prelude.hpp"

#include "kernel_args.hpp"

namespace switchyard::fused::jit {
namespace {

// Needs a GPU: replaced by tests/fused/emulator/cuda_emulation.hpp under SY_EMULATION.
constexpr const char* kDevicePrimitives = R"SY(
#ifndef SY_EMULATION
typedef long long sy_i64;
typedef unsigned long long sy_u64;
typedef unsigned int sy_u32;
typedef unsigned short sy_u16;
#define SY_DEVICE __device__ __forceinline__
#define SY_SHARED __shared__
#define SY_KERNEL(threads) extern "C" __global__ void __launch_bounds__(threads)
#define SY_KERNEL_OCCUPANCY(threads, blocks) \
  extern "C" __global__ void __launch_bounds__(threads, blocks)
#define SY_UNROLL _Pragma("unroll")
#define SY_THREAD_X ((int)threadIdx.x)
#define SY_BLOCK_X ((sy_i64)blockIdx.x)
#define SY_BLOCK_Y ((int)blockIdx.y)

SY_DEVICE float sy_bits_to_float(sy_u32 u) { return __uint_as_float(u); }
SY_DEVICE sy_u32 sy_float_to_bits(float f) { return __float_as_uint(f); }
SY_DEVICE float sy_bf16_to_f32(sy_u16 h) { return __uint_as_float(((sy_u32)h) << 16); }
SY_DEVICE sy_u16 sy_f32_to_bf16(float f) {
#if __CUDA_ARCH__ >= 800
  sy_u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  const sy_u32 u = __float_as_uint(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0u)
    return (sy_u16)((u >> 16) | 0x0040u);
  return (sy_u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
}
SY_DEVICE float sy_f16_to_f32(sy_u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
SY_DEVICE sy_u16 sy_f32_to_f16(float f) {
  sy_u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
// Reads through L2 only: values another block wrote in this kernel (the last-block pattern).
SY_DEVICE float sy_load_cg(const float* p) { return __ldcg(p); }
SY_DEVICE sy_u64 sy_load_cg(const sy_u64* p) { return __ldcg(p); }
SY_DEVICE float sy_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
SY_DEVICE sy_u64 sy_shfl_xor(sy_u64 v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
SY_DEVICE sy_u32 sy_atomic_inc(sy_u32* p) { return atomicAdd(p, 1u); }
SY_DEVICE void sy_atomic_max(sy_u64* p, sy_u64 v) { atomicMax(p, v); }
SY_DEVICE void sy_fence() { __threadfence(); }
SY_DEVICE void sy_sync() { __syncthreads(); }
SY_DEVICE float sy_expf(float x) { return expf(x); }
SY_DEVICE float sy_sqrtf(float x) { return sqrtf(x); }
SY_DEVICE double sy_log(double x) { return log(x); }
#endif  // SY_EMULATION
)SY";

// Plain C++: runs on the GPU and in the emulation alike.
constexpr const char* kCommonHelpers = R"SY(
SY_DEVICE float sy_neg_inf() { return sy_bits_to_float(0xff800000u); }
template <class T> SY_DEVICE T sy_min(T a, T b) { return b < a ? b : a; }
template <class T> SY_DEVICE T sy_max(T a, T b) { return a < b ? b : a; }

// ---- dtypes: 0 float32, 1 bfloat16, 2 float16 ----
template <int D> struct SyStorage { typedef sy_u16 type; };
template <> struct SyStorage<0> { typedef float type; };

template <int D> SY_DEVICE float sy_to_f32(typename SyStorage<D>::type v) {
  if constexpr (D == 0) return v;
  else if constexpr (D == 1) return sy_bf16_to_f32(v);
  else return sy_f16_to_f32(v);
}
template <int D> SY_DEVICE typename SyStorage<D>::type sy_from_f32(float v) {
  if constexpr (D == 0) return v;
  else if constexpr (D == 1) return sy_f32_to_bf16(v);
  else return sy_f32_to_f16(v);
}
// v rounded once to dtype D, as float.
template <int D> SY_DEVICE float sy_round(float v) { return sy_to_f32<D>(sy_from_f32<D>(v)); }

// ---- vector access: N consecutive elements of dtype D ----
template <class S, int K> struct alignas(sizeof(S) * K) SyPack { S v[K]; };

template <int D, int N> struct SyAccess {
  static constexpr int kElement = D == 0 ? 4 : 2;
  static constexpr int kBytes = N * kElement;
  static constexpr int kChunk = kBytes < 16 ? kBytes : 16;  // bytes per load instruction
  static constexpr int kPer = kChunk / kElement;            // elements per instruction
  static constexpr int kCount = kBytes / kChunk;            // instructions
};

// True when row `p` lets N-element groups at multiples of N be accessed as vectors.
template <int D, int N> SY_DEVICE bool sy_aligned(const void* p) {
  return (reinterpret_cast<sy_u64>(p) % (sy_u64)SyAccess<D, N>::kChunk) == 0;
}

// out[e] = p[e] for e < valid (0 beyond); memory past `valid` is never touched. `vector`
// (from sy_aligned) lets a full group load with vector instructions; both paths give the
// same values, so results never depend on the alignment of the caller's buffers.
template <int D, int N>
SY_DEVICE void sy_load(const typename SyStorage<D>::type* p, float (&out)[N], bool vector, int valid) {
  typedef typename SyStorage<D>::type S;
  typedef SyAccess<D, N> A;
  if (vector && valid >= N) {
    SY_UNROLL
    for (int l = 0; l < A::kCount; ++l) {
      const SyPack<S, A::kPer> pack = reinterpret_cast<const SyPack<S, A::kPer>*>(p)[l];
      SY_UNROLL
      for (int e = 0; e < A::kPer; ++e) out[l * A::kPer + e] = sy_to_f32<D>(pack.v[e]);
    }
  } else {
    SY_UNROLL
    for (int e = 0; e < N; ++e) out[e] = e < valid ? sy_to_f32<D>(p[e]) : 0.0f;
  }
}

// p[e] = round(in[e]) for e < valid.
template <int D, int N>
SY_DEVICE void sy_store(typename SyStorage<D>::type* p, const float (&in)[N], bool vector, int valid) {
  typedef typename SyStorage<D>::type S;
  typedef SyAccess<D, N> A;
  if (vector && valid >= N) {
    SY_UNROLL
    for (int l = 0; l < A::kCount; ++l) {
      SyPack<S, A::kPer> pack;
      SY_UNROLL
      for (int e = 0; e < A::kPer; ++e) pack.v[e] = sy_from_f32<D>(in[l * A::kPer + e]);
      reinterpret_cast<SyPack<S, A::kPer>*>(p)[l] = pack;
    }
  } else {
    SY_UNROLL
    for (int e = 0; e < N; ++e)
      if (e < valid) p[e] = sy_from_f32<D>(in[e]);
  }
}

// ---- block reductions: a fixed association order, so every run gives the same bits ----
// Butterfly within each warp (commutative steps: every lane holds the same bits), then the
// warp totals in warp order.
template <int THREADS> SY_DEVICE float sy_block_sum(float v) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
  SY_UNROLL
  for (int mask = 16; mask > 0; mask >>= 1) v += sy_shfl_xor(v, mask);
  SY_SHARED float warp_total[THREADS / 32];
  if (SY_THREAD_X % 32 == 0) warp_total[SY_THREAD_X / 32] = v;
  sy_sync();
  float total = warp_total[0];
  for (int w = 1; w < THREADS / 32; ++w) total += warp_total[w];
  sy_sync();  // warp_total is reused by the next reduction
  return total;
}

template <int THREADS> SY_DEVICE sy_u64 sy_block_max(sy_u64 v) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
  SY_UNROLL
  for (int mask = 16; mask > 0; mask >>= 1) v = sy_max(v, sy_shfl_xor(v, mask));
  SY_SHARED sy_u64 warp_best[THREADS / 32];
  if (SY_THREAD_X % 32 == 0) warp_best[SY_THREAD_X / 32] = v;
  sy_sync();
  sy_u64 best = warp_best[0];
  for (int w = 1; w < THREADS / 32; ++w) best = sy_max(best, warp_best[w]);
  sy_sync();
  return best;
}
)SY";

}  // namespace

std::string source_prelude() {
  std::string out = "// ---- switchyard fused: device helpers ----\n";
  out += kDevicePrimitives;
  out += kCommonHelpers;
  out += "\n// ---- kernel arguments (host layout, checked) ----\n";
  out += kernel_args_source();
  return out;
}

}  // namespace switchyard::fused::jit
