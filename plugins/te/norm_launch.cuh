// What te's normalization launchers share (norm_forward.cu, norm_backward.cu): where a ring
// stage keeps each streamed tensor's row, how many stages fit a kernel's blocks, the
// persistent grid, and the dispatch from the call's dtypes and register layout to the kernels'
// template parameters. Included by .cu files only.
#ifndef SWITCHYARD_TE_NORM_LAUNCH_CUH
#define SWITCHYARD_TE_NORM_LAUNCH_CUH

#include "cuda_support.hpp"
#include "norm_device.cuh"
#include "norm_plan.hpp"

#include <switchyard/cuda/bulk_copy.cuh>
#include <switchyard/plugin_helpers.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace switchyard::te {

inline cudaStream_t stream_of(void* stream) { return static_cast<cudaStream_t>(stream); }

// One streamed tensor: its first row, the distance between rows and the bytes of a row.
struct Stream {
  const void* base = nullptr;  // NULL: absent
  int64_t stride = 0;
  int64_t bytes = 0;
};

// Where a stage keeps each tensor's row (stages still 0), or stage_bytes = 0 when a row cannot
// be bulk-copied (not 16-byte aligned).
inline RingLayout ring_stage(std::initializer_list<Stream> streams) {
  RingLayout r;
  int k = 0;
  uint32_t stage = 0;
  for (const Stream& s : streams) {
    if (s.base != nullptr) {
      if (!cuda::bulk_copy_ok(s.base, s.bytes) || s.stride % 16 != 0) return RingLayout{};
      r.offset[k] = stage;
      r.bytes[k] = static_cast<uint32_t>(s.bytes);
      stage += static_cast<uint32_t>((s.bytes + 127) / 128 * 128);
    }
    ++k;
  }
  r.stage_bytes = stage;
  return r;
}

// A block's copy of a parameter row of `hidden` elements, VEC to a 16-byte chunk
// (RingLayout::parameter_bytes).
inline uint32_t parameter_copy_bytes(int64_t hidden, int vec) {
  return static_cast<uint32_t>((hidden + vec - 1) / vec * 16);
}

// The dynamic shared memory a ring may take in each of `blocks` blocks of `kernel` on one
// multiprocessor, less `reserved` bytes. A block's share of the multiprocessor also pays the
// kernel's static shared memory and the driver's reservation per block: an estimate of those
// that fell short by a few hundred bytes left one 256-thread backward block a multiprocessor at
// H = 8192, not two.
inline int ring_budget(const void* kernel, int blocks, int device, uint32_t reserved) {
  const DeviceInfo info = device_info(device);
  const int share = std::min(info.max_shared_per_block_optin,
                             info.shared_per_multiprocessor / blocks - info.reserved_shared_per_block);
  return share - static_shared_bytes(kernel) - static_cast<int>(reserved);
}

// Calls fits(ring_budget) for the most blocks a multiprocessor that its registers and threads
// allow, then for one block fewer, ..., until it returns true; false when no count does. Where
// the blocks the registers allow leave too little memory for a ring (fp32 rows: 16 KiB a stage
// at H = 4096 in the forward, 32 in the backward), fewer blocks that stream their rows beat
// the general kernel's direct loads (the dynamic shared memory then limits the grid).
template <class Fits>
bool budget_for_ring(const void* kernel, int threads, int device, uint32_t reserved, Fits&& fits) {
  for (int blocks = blocks_per_multiprocessor(kernel, threads, 0, device); blocks >= 1; --blocks)
    if (fits(ring_budget(kernel, blocks, device, reserved))) return true;
  return false;
}

// As many stages as fit the ring's budget, at most `most` (2 ... kMaxStages); stages = 0 when
// fewer than two fit even one block a multiprocessor.
inline RingLayout with_stages(RingLayout r, const void* kernel, int threads, int device,
                              uint32_t most = kMaxStages) {
  if (r.stage_bytes == 0) return r;
  r.stages = 0;
  budget_for_ring(kernel, threads, device, r.parameter_bytes, [&](int per_block) {
    const uint32_t stages = per_block > 0 ? static_cast<uint32_t>(per_block) / r.stage_bytes : 0;
    if (stages >= 2) r.stages = std::min({stages, most, kMaxStages});
    return r.stages != 0;
  });
  return r;
}

inline size_t ring_bytes(const RingLayout& r) {
  return static_cast<size_t>(r.stages) * r.stage_bytes + r.parameter_bytes;
}

inline size_t ring_bytes(const BackwardRings& r) {
  return ring_bytes(r.late) + static_cast<size_t>(r.early.stages) * r.early.stage_bytes;
}

// Persistent grid: (multiprocessors - sm_margin) x blocks per multiprocessor, at most `units`.
inline int grid_for(const void* kernel, int block, size_t shared, int64_t units, int device,
             int sm_margin) {
  const DeviceInfo info = device_info(device);
  const int usable = info.multiprocessors - sm_margin;
  if (usable < 1)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             "problem.sm_margin = " + std::to_string(sm_margin) + " leaves none of the " +
                 std::to_string(info.multiprocessors) + " multiprocessors of cuda:" +
                 std::to_string(device) + " to te; use a margin below " +
                 std::to_string(info.multiprocessors));
  const int64_t blocks =
      static_cast<int64_t>(usable) * blocks_per_multiprocessor(kernel, block, shared, device);
  return static_cast<int>(std::min<int64_t>(blocks, units));
}

// The dtype of every tensor of the call, or kMixed.
inline int uniform_dtype(DType x, std::initializer_list<DType> others) {
  for (DType d : others)
    if (d != x) return kMixed;
  return static_cast<int>(x);
}

// Calls fn(std::integral_constant<int, D>) for the compile-time dtype D = d that a row of VEC
// elements per 16 bytes can have (bf16 or f16 for 8, f32 for 4); false when d is none of them.
template <int VEC, class Fn>
bool with_streamed_dtype(int d, Fn&& fn) {
  constexpr int kBf16 = static_cast<int>(DType::BF16), kF16 = static_cast<int>(DType::F16),
                kF32 = static_cast<int>(DType::F32);
  if constexpr (VEC == 8) {
    if (d == kBf16) return fn(std::integral_constant<int, kBf16>{}), true;
    if (d == kF16) return fn(std::integral_constant<int, kF16>{}), true;
  } else {
    if (d == kF32) return fn(std::integral_constant<int, kF32>{}), true;
  }
  return false;
}

// Calls fn(std::integral_constant<int, VEC>, std::integral_constant<int, CPT>) for the register
// layouts the kernels are instantiated for: 16-bit rows (VEC 8) 1, 2, 4 chunks a thread (and 8
// when kWide8: the forward's 64 elements), fp32 rows (VEC 4) 1, 2, 4, 8.
template <bool kWide8, class Fn>
void with_layout(const NormLayout& layout, const char* kernel, Fn&& fn) {
  using std::integral_constant;
  switch (layout.vec * 16 + layout.chunks_per_thread) {
    case 8 * 16 + 1: return fn(integral_constant<int, 8>{}, integral_constant<int, 1>{});
    case 8 * 16 + 2: return fn(integral_constant<int, 8>{}, integral_constant<int, 2>{});
    case 8 * 16 + 4: return fn(integral_constant<int, 8>{}, integral_constant<int, 4>{});
    case 8 * 16 + 8:
      if constexpr (kWide8) return fn(integral_constant<int, 8>{}, integral_constant<int, 8>{});
      break;
    case 4 * 16 + 1: return fn(integral_constant<int, 4>{}, integral_constant<int, 1>{});
    case 4 * 16 + 2: return fn(integral_constant<int, 4>{}, integral_constant<int, 2>{});
    case 4 * 16 + 4: return fn(integral_constant<int, 4>{}, integral_constant<int, 4>{});
    case 4 * 16 + 8: return fn(integral_constant<int, 4>{}, integral_constant<int, 8>{});
    default: break;
  }
  sy::fail(SY_ERR_INTERNAL, std::string("te: no ") + kernel + " for " + std::to_string(layout.vec) +
                                " x " + std::to_string(layout.chunks_per_thread) +
                                " elements per thread");
}

}  // namespace switchyard::te

#endif
