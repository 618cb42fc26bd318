// Force-included (g++ -include) when a generated kernel source is compiled as host C++ for
// the CPU emulator (emulator.hpp). It supplies what the source's prelude keeps behind
// `#ifndef SY_EMULATION`: scalar types, conversions, warp shuffles, barriers, atomics. The
// threads of a block are fibers of one OS thread, switched only at barriers and shuffles, so
// atomics need no hardware support and a missed barrier shows up as a deadlock report.
#ifndef SWITCHYARD_TESTS_FUSED_CUDA_EMULATION_HPP
#define SWITCHYARD_TESTS_FUSED_CUDA_EMULATION_HPP

#define SY_EMULATION 1

#include <switchyard/float16.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>

typedef long long sy_i64;
typedef unsigned long long sy_u64;
typedef unsigned int sy_u32;
typedef unsigned short sy_u16;

struct SyEmuIndex {
  unsigned x, y, z;
};

// Filled by the emulator (it looks the symbol up after dlopen).
struct SyEmuHooks {
  const SyEmuIndex* (*thread_index)();
  const SyEmuIndex* (*block_index)();
  void (*sync_threads)();
  sy_u64 (*shuffle_xor)(sy_u64 bits, int lane_mask);
};
extern "C" {
SyEmuHooks* sy_emu_hooks = nullptr;
}

#define SY_DEVICE static inline
#define SY_SHARED static
#define SY_KERNEL(threads) extern "C" void
#define SY_KERNEL_OCCUPANCY(threads, blocks) extern "C" void
#define SY_UNROLL
#define SY_THREAD_X ((int)sy_emu_hooks->thread_index()->x)
#define SY_BLOCK_X ((sy_i64)sy_emu_hooks->block_index()->x)
#define SY_BLOCK_Y ((int)sy_emu_hooks->block_index()->y)

SY_DEVICE float sy_bits_to_float(sy_u32 u) { return sy::bits_to_float(u); }
SY_DEVICE sy_u32 sy_float_to_bits(float f) { return sy::float_to_bits(f); }
SY_DEVICE float sy_bf16_to_f32(sy_u16 h) { return sy::bf16_to_float(h); }
SY_DEVICE sy_u16 sy_f32_to_bf16(float f) { return sy::float_to_bf16(f); }
SY_DEVICE float sy_f16_to_f32(sy_u16 h) { return sy::f16_to_float(h); }
SY_DEVICE sy_u16 sy_f32_to_f16(float f) { return sy::float_to_f16(f); }
SY_DEVICE float sy_load_cg(const float* p) { return *p; }
SY_DEVICE sy_u64 sy_load_cg(const sy_u64* p) { return *p; }
SY_DEVICE sy_u64 sy_shfl_xor(sy_u64 v, int mask) { return sy_emu_hooks->shuffle_xor(v, mask); }
SY_DEVICE float sy_shfl_xor(float v, int mask) {
  return sy_bits_to_float(static_cast<sy_u32>(sy_emu_hooks->shuffle_xor(sy_float_to_bits(v), mask)));
}
// Fibers switch only at barriers and shuffles: a read-modify-write is atomic as written.
SY_DEVICE sy_u32 sy_atomic_inc(sy_u32* p) { return (*p)++; }
SY_DEVICE void sy_atomic_max(sy_u64* p, sy_u64 v) {
  if (v > *p) *p = v;
}
SY_DEVICE void sy_fence() {}
SY_DEVICE void sy_sync() { sy_emu_hooks->sync_threads(); }
SY_DEVICE float sy_expf(float x) { return std::exp(x); }
SY_DEVICE float sy_sqrtf(float x) { return std::sqrt(x); }
SY_DEVICE double sy_log(double x) { return std::log(x); }

#endif  // SWITCHYARD_TESTS_FUSED_CUDA_EMULATION_HPP
