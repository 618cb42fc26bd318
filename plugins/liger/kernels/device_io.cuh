// Device helpers shared by the liger kernels: chunk loads/stores of the three data dtypes as
// float, single-rounding conversions, the fast exponential, and deterministic block reductions.
//
// A chunk is kChunk (8) consecutive elements of a row. Chunk c of a row belongs to thread
// c % blockDim.x, for every dtype and alignment, so a thread always sees the same elements in
// the same order: the reductions below are fixed trees, and results are bit-identical from run
// to run, independent of the other rows and of whether 16-byte accesses were possible.
#ifndef SWITCHYARD_LIGER_KERNELS_DEVICE_IO_CUH
#define SWITCHYARD_LIGER_KERNELS_DEVICE_IO_CUH

#include "launch.hpp"

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define SY_LIGER_SHARED __shared__
#else
// Host compilation (tests/liger's block emulator runs these kernels on CPU fibers): the same
// code over plain C++ primitives. The emulator defines the thread-identity functions below.
#include <switchyard/float16.hpp>

#include <cmath>
#define SY_LIGER_SHARED static
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#endif

namespace switchyard::liger::device {

constexpr float kLog2e = 1.4426950408889634f;
constexpr unsigned kFullMask = 0xffffffffu;
// Row kernels keep two blocks of kMaxRowThreads per SM resident (<= 64 registers): enough
// loads in flight to saturate HBM without relying on one block per SM.
constexpr int kMinRowBlocks = 2;

// ---- primitives: thread identity, barriers, exchanges, correctly rounded arithmetic ---------
// Written as functions so that no kernel touches a CUDA builtin directly. The _rn arithmetic
// is never contracted into FMAs: reductions must give the same bits on every lane.

#if defined(__CUDACC__)

__device__ __forceinline__ unsigned thread_x() { return threadIdx.x; }
__device__ __forceinline__ unsigned block_x() { return blockIdx.x; }
__device__ __forceinline__ unsigned block_dim() { return blockDim.x; }
__device__ __forceinline__ unsigned grid_dim() { return gridDim.x; }
__device__ __forceinline__ void sync_threads() { __syncthreads(); }
__device__ __forceinline__ void* dynamic_shared() {
  extern __shared__ float4 dynamic_shared_memory[];
  return dynamic_shared_memory;
}
template <class T>
__device__ __forceinline__ T shfl_xor(T value, int offset) {
  return __shfl_xor_sync(kFullMask, value, offset);
}
__device__ __forceinline__ void atomic_min(unsigned long long* at, unsigned long long value) {
  atomicMin(at, value);
}
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ float log_of(float a) { return logf(a); }
__device__ __forceinline__ bool is_nan(float a) { return isnan(a); }

// 2^x with one MUFU.EX2 (max. relative error about 2 ulp); 2^-inf = +0, results below the
// normal range flush to 0 (they are below 1e-38 and vanish in every sum they enter).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float bf16_bits_to_float(uint32_t bits) {
  return __uint_as_float(bits << 16);
}
__device__ __forceinline__ float f16_bits_to_float(uint16_t bits) {
  return __half2float(__ushort_as_half(bits));
}
__device__ __forceinline__ uint16_t float_to_bf16_bits(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}
__device__ __forceinline__ uint16_t float_to_f16_bits(float f) {
  return __half_as_ushort(__float2half_rn(f));
}

#else  // host emulation

unsigned thread_x();
unsigned block_x();
unsigned block_dim();
unsigned grid_dim();
void sync_threads();
void* dynamic_shared();
// Lane `thread_x() ^ offset`'s `bits` (every thread of the block calls it together).
uint64_t exchange_xor(uint64_t bits, int offset);

template <class T>
inline T shfl_xor(T value, int offset) {
  static_assert(sizeof(T) <= 8, "shfl_xor exchanges at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  bits = exchange_xor(bits, offset);
  T out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
inline void atomic_min(unsigned long long* at, unsigned long long value) {
  if (value < *at) *at = value;  // the emulator runs one fiber at a time
}
inline float add_rn(float a, float b) { return a + b; }
inline float sub_rn(float a, float b) { return a - b; }
inline float mul_rn(float a, float b) { return a * b; }
inline float fma_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float div_rn(float a, float b) { return a / b; }
inline float sqrt_rn(float a) { return std::sqrt(a); }
inline float log_of(float a) { return std::log(a); }
inline bool is_nan(float a) { return std::isnan(a); }
inline float fast_exp2(float x) { return std::exp2(x); }
inline float bf16_bits_to_float(uint32_t bits) {
  return sy::bf16_to_float(static_cast<uint16_t>(bits));
}
inline float f16_bits_to_float(uint16_t bits) { return sy::f16_to_float(bits); }
inline uint16_t float_to_bf16_bits(float f) { return sy::float_to_bf16(f); }
inline uint16_t float_to_f16_bits(float f) { return sy::float_to_f16(f); }

#endif

// exp(x - m), with x - m formed first so that the exponent carries no error of |x| (logits of
// 40 would otherwise cost ulp(40 * log2 e) in the exponent).
__device__ __forceinline__ float exp_minus(float x, float m) {
  return fast_exp2(mul_rn(sub_rn(x, m), kLog2e));
}

// ---- element conversions -------------------------------------------------------------------

template <Dt D>
__device__ __forceinline__ float bits_to_float(uint16_t bits) {
  if constexpr (D == Dt::BF16)
    return bf16_bits_to_float(bits);
  else
    return f16_bits_to_float(bits);
}
template <Dt D>
__device__ __forceinline__ uint16_t float_to_bits(float f) {
  if constexpr (D == Dt::BF16)
    return float_to_bf16_bits(f);
  else
    return float_to_f16_bits(f);
}

// The value a float takes once stored in dtype `d` (round to nearest even).
__device__ __forceinline__ float round_to(Dt d, float f) {
  switch (d) {
    case Dt::BF16: return bf16_bits_to_float(float_to_bf16_bits(f));
    case Dt::F16: return f16_bits_to_float(float_to_f16_bits(f));
    default: return f;
  }
}

// ---- typed chunk access (compile-time dtype: the cross-entropy hot loops) -------------------

// Elements [index, index + 8) of `base`. kAligned: base + index is 16-byte aligned.
template <Dt D, bool kAligned>
__device__ __forceinline__ void load8(const void* base, int64_t index, float (&v)[kChunk]) {
  if constexpr (D == Dt::F32) {
    const float* p = static_cast<const float*>(base) + index;
    if constexpr (kAligned) {
      const float4 a = reinterpret_cast<const float4*>(p)[0];
      const float4 b = reinterpret_cast<const float4*>(p)[1];
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
      v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    } else {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) v[k] = p[k];
    }
  } else {
    const uint16_t* p = static_cast<const uint16_t*>(base) + index;
    if constexpr (kAligned) {
      const uint4 raw = *reinterpret_cast<const uint4*>(p);
      const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        v[2 * k] = bits_to_float<D>(static_cast<uint16_t>(words[k] & 0xffffu));
        v[2 * k + 1] = bits_to_float<D>(static_cast<uint16_t>(words[k] >> 16));
      }
    } else {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) v[k] = bits_to_float<D>(p[k]);
    }
  }
}

// Elements [index, index + n) with n < 8 (a row's last, partial chunk); the rest read as 0.
template <Dt D>
__device__ __forceinline__ void load_n(const void* base, int64_t index, int n,
                                       float (&v)[kChunk]) {
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    if (k < n) {
      if constexpr (D == Dt::F32)
        v[k] = static_cast<const float*>(base)[index + k];
      else
        v[k] = bits_to_float<D>(static_cast<const uint16_t*>(base)[index + k]);
    } else {
      v[k] = 0.0f;
    }
  }
}

template <Dt D>
__device__ __forceinline__ float load1(const void* base, int64_t index) {
  if constexpr (D == Dt::F32)
    return static_cast<const float*>(base)[index];
  else
    return bits_to_float<D>(static_cast<const uint16_t*>(base)[index]);
}

// Stores v rounded once to D.
template <Dt D, bool kAligned>
__device__ __forceinline__ void store8(void* base, int64_t index, const float (&v)[kChunk]) {
  if constexpr (D == Dt::F32) {
    float* p = static_cast<float*>(base) + index;
    if constexpr (kAligned) {
      reinterpret_cast<float4*>(p)[0] = float4{v[0], v[1], v[2], v[3]};
      reinterpret_cast<float4*>(p)[1] = float4{v[4], v[5], v[6], v[7]};
    } else {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) p[k] = v[k];
    }
  } else {
    uint16_t* p = static_cast<uint16_t*>(base) + index;
    if constexpr (kAligned) {
      uint32_t words[4];
#pragma unroll
      for (int k = 0; k < 4; ++k)
        words[k] = static_cast<uint32_t>(float_to_bits<D>(v[2 * k])) |
                   (static_cast<uint32_t>(float_to_bits<D>(v[2 * k + 1])) << 16);
      *reinterpret_cast<uint4*>(p) = uint4{words[0], words[1], words[2], words[3]};
    } else {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) p[k] = float_to_bits<D>(v[k]);
    }
  }
}

template <Dt D>
__device__ __forceinline__ void store_n(void* base, int64_t index, int n,
                                        const float (&v)[kChunk]) {
#pragma unroll
  for (int k = 0; k < kChunk; ++k) {
    if (k < n) {
      if constexpr (D == Dt::F32)
        static_cast<float*>(base)[index + k] = v[k];
      else
        static_cast<uint16_t*>(base)[index + k] = float_to_bits<D>(v[k]);
    }
  }
}

// ---- run-time dtype chunk access (the norm kernels: many tensors, few instantiations) -------

// Elements [index, index + n) of a tensor of dtype d, n <= 8; the rest read as 0. A full,
// aligned chunk uses 16-byte accesses.
template <bool kAligned>
__device__ __forceinline__ void load_chunk(const void* base, Dt d, int64_t index, int n,
                                           float (&v)[kChunk]) {
  if (n == kChunk) {
    switch (d) {
      case Dt::F32: load8<Dt::F32, kAligned>(base, index, v); return;
      case Dt::BF16: load8<Dt::BF16, kAligned>(base, index, v); return;
      default: load8<Dt::F16, kAligned>(base, index, v); return;
    }
  }
  switch (d) {
    case Dt::F32: load_n<Dt::F32>(base, index, n, v); return;
    case Dt::BF16: load_n<Dt::BF16>(base, index, n, v); return;
    default: load_n<Dt::F16>(base, index, n, v); return;
  }
}

template <bool kAligned>
__device__ __forceinline__ void store_chunk(void* base, Dt d, int64_t index, int n,
                                            const float (&v)[kChunk]) {
  if (n == kChunk) {
    switch (d) {
      case Dt::F32: store8<Dt::F32, kAligned>(base, index, v); return;
      case Dt::BF16: store8<Dt::BF16, kAligned>(base, index, v); return;
      default: store8<Dt::F16, kAligned>(base, index, v); return;
    }
  }
  switch (d) {
    case Dt::F32: store_n<Dt::F32>(base, index, n, v); return;
    case Dt::BF16: store_n<Dt::BF16>(base, index, n, v); return;
    default: store_n<Dt::F16>(base, index, n, v); return;
  }
}

__device__ __forceinline__ void store1(void* base, Dt d, int64_t index, float value) {
  switch (d) {
    case Dt::F32: static_cast<float*>(base)[index] = value; return;
    case Dt::BF16: static_cast<uint16_t*>(base)[index] = float_to_bf16_bits(value); return;
    default: static_cast<uint16_t*>(base)[index] = float_to_f16_bits(value); return;
  }
}

// ---- labels ---------------------------------------------------------------------------------

__device__ __forceinline__ int64_t load_label(const void* labels, bool labels64, int64_t row) {
  return labels64 ? static_cast<const int64_t*>(labels)[row]
                  : static_cast<int64_t>(static_cast<const int32_t*>(labels)[row]);
}

// ---- block reductions -----------------------------------------------------------------------

// false: block_sum's run-time loop for every warp count (for A/B).
constexpr bool kBlockSumUnrolled = true;

// The second stage of block_sum for a block of W warps known at compile time: every warp's
// partial loaded before the first add (independent loads, LDS.128 at 8 warps: one shared-memory
// latency), then added in warp order as the run-time loop does (the same bits). The run-time
// loop compiled to 16/8/4-wide unrolled blocks plus a remainder of up to three dependent
// load-then-add steps behind branches, one N after the other: at 8 warps and N = 2 about eight
// serial shared-memory round trips a row.
template <int W, int N>
__device__ __forceinline__ void add_warp_partials(float (&v)[N], const float* scratch) {
  float p[N][W];
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int w = 0; w < W; ++w) p[i][w] = scratch[i * 32 + w];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float s = p[i][0];
#pragma unroll
    for (int w = 1; w < W; ++w) s = add_rn(s, p[i][w]);
    v[i] = s;
  }
}

// Sums N values over the block; every thread gets the same bits. A warp butterfly (each step
// adds the same two operands on both partner lanes, and IEEE addition commutes), then the warp
// sums in warp order. blockDim.x must be a multiple of 32; `scratch` holds N * 32 floats.
// kReuse = false: the caller never passes the same scratch to two consecutive calls (it
// alternates two), so the trailing barrier is not needed: a thread writes scratch in call m + 2
// only after passing call m + 1's barrier, which every thread reaches after its reads of call m.
template <int N, bool kReuse = true>
__device__ __forceinline__ void block_sum(float (&v)[N], float* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = add_rn(v[i], shfl_xor(v[i], offset));
  }
  const int warp = static_cast<int>(thread_x()) / 32;
  const int warps = static_cast<int>(block_dim()) / 32;
  if (thread_x() % 32 == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i) scratch[i * 32 + warp] = v[i];
  }
  sync_threads();
  // The ring kernels' block sizes (4, 8, 16 warps) unrolled; others the loop.
  if (kBlockSumUnrolled && warps == 8) {
    add_warp_partials<8>(v, scratch);
  } else if (kBlockSumUnrolled && warps == 4) {
    add_warp_partials<4>(v, scratch);
  } else if (kBlockSumUnrolled && warps == 16) {
    add_warp_partials<16>(v, scratch);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      float s = scratch[i * 32];
      // Not unrolled: the compiler's unrolled remainder keeps a trip count live across the row
      // (a 4-byte spill in the 128-register LayerNorm backward).
#pragma unroll 1
      for (int w = 1; w < warps; ++w) s = add_rn(s, scratch[i * 32 + w]);
      v[i] = s;
    }
  }
  if constexpr (kReuse) sync_threads();  // scratch may be reused at once
}

}  // namespace switchyard::liger::device

#endif
