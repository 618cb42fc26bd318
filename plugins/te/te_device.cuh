// Device-side building blocks of te's kernels: dtype traits over raw bits, loads and stores of
// 8/16/32-byte packs (the vector path) or element by element (the scalar path), labels, and
// reductions whose order is fixed by the thread layout alone (deterministic results).
#ifndef SWITCHYARD_TE_TE_DEVICE_CUH
#define SWITCHYARD_TE_TE_DEVICE_CUH

#include "kernel_args.hpp"
#include "te_math.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace switchyard::te {

constexpr unsigned kFullMask = 0xffffffffu;

// ---- dtypes as raw bits -----------------------------------------------------------------------

template <DType D>
struct DT;
template <>
struct DT<DType::F32> {
  using raw = uint32_t;
  static constexpr raw kNegInf = 0xff800000u;
  __device__ static float to_float(raw r) { return __uint_as_float(r); }
  __device__ static raw from_float(float f) { return __float_as_uint(f); }
};
template <>
struct DT<DType::BF16> {
  using raw = uint16_t;
  static constexpr raw kNegInf = 0xff80u;
  __device__ static float to_float(raw r) { return __uint_as_float(static_cast<uint32_t>(r) << 16); }
  __device__ static raw from_float(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};
template <>
struct DT<DType::F16> {
  using raw = uint16_t;
  static constexpr raw kNegInf = 0xfc00u;
  __device__ static float to_float(raw r) { return __half2float(__ushort_as_half(r)); }
  __device__ static raw from_float(float f) { return __half_as_ushort(__float2half_rn(f)); }
};

// f rounded to dtype d and back (the value a tensor of dtype d would hold).
__device__ __forceinline__ float round_to(DType d, float f) {
  switch (d) {
    case DType::BF16: return DT<DType::BF16>::to_float(DT<DType::BF16>::from_float(f));
    case DType::F16: return DT<DType::F16>::to_float(DT<DType::F16>::from_float(f));
    default: return f;
  }
}

// ---- packs: N consecutive elements, moved as one 8/16/32-byte access ----------------------

enum class Cache { Normal, KeepInL2, Streaming };

template <DType D, int N>
struct Pack {
  typename DT<D>::raw r[N];
};

template <Cache C>
__device__ __forceinline__ uint4 load16(const void* p) {
  const uint4* q = static_cast<const uint4*>(p);
  if constexpr (C == Cache::Streaming) return __ldcs(q);
  else if constexpr (C == Cache::KeepInL2) return __ldcg(q);
  else return *q;
}
template <Cache C>
__device__ __forceinline__ uint2 load8(const void* p) {
  const uint2* q = static_cast<const uint2*>(p);
  if constexpr (C == Cache::Streaming) return __ldcs(q);
  else if constexpr (C == Cache::KeepInL2) return __ldcg(q);
  else return *q;
}
template <Cache C>
__device__ __forceinline__ void store16(void* p, uint4 w) {
  if constexpr (C == Cache::Streaming) __stcs(static_cast<uint4*>(p), w);
  else *static_cast<uint4*>(p) = w;
}
template <Cache C>
__device__ __forceinline__ void store8(void* p, uint2 w) {
  if constexpr (C == Cache::Streaming) __stcs(static_cast<uint2*>(p), w);
  else *static_cast<uint2*>(p) = w;
}

// Vector load of a whole pack; `src` must be aligned to min(16, sizeof(Pack)).
template <Cache C, DType D, int N>
__device__ __forceinline__ void load_pack(Pack<D, N>& p, const typename DT<D>::raw* src) {
  constexpr int kBytes = static_cast<int>(sizeof(Pack<D, N>));
  static_assert(kBytes == 8 || kBytes == 16 || kBytes == 32, "packs are 8, 16 or 32 bytes");
  if constexpr (kBytes == 8) {
    const uint2 w = load8<C>(src);
    memcpy(&p, &w, 8);
  } else {
    const uint4 w0 = load16<C>(src);
    memcpy(&p, &w0, 16);
    if constexpr (kBytes == 32) {
      const uint4 w1 = load16<C>(reinterpret_cast<const char*>(src) + 16);
      memcpy(reinterpret_cast<char*>(&p) + 16, &w1, 16);
    }
  }
}

template <Cache C, DType D, int N>
__device__ __forceinline__ void store_pack(typename DT<D>::raw* dst, const Pack<D, N>& p) {
  constexpr int kBytes = static_cast<int>(sizeof(Pack<D, N>));
  static_assert(kBytes == 8 || kBytes == 16 || kBytes == 32, "packs are 8, 16 or 32 bytes");
  if constexpr (kBytes == 8) {
    uint2 w;
    memcpy(&w, &p, 8);
    store8<C>(dst, w);
  } else {
    uint4 w0;
    memcpy(&w0, &p, 16);
    store16<C>(dst, w0);
    if constexpr (kBytes == 32) {
      uint4 w1;
      memcpy(&w1, reinterpret_cast<const char*>(&p) + 16, 16);
      store16<C>(reinterpret_cast<char*>(dst) + 16, w1);
    }
  }
}

__device__ __forceinline__ bool aligned_to(const void* p, unsigned bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

// The alignment a pack of N elements of D needs for the vector path.
template <DType D, int N>
__host__ __device__ constexpr unsigned pack_alignment() {
  return sizeof(Pack<D, N>) >= 16 ? 16u : static_cast<unsigned>(sizeof(Pack<D, N>));
}

// ---- chunks of a row as floats, run-time dtype ---------------------------------------------

// Elements [col0, col0 + valid) of `row` into out[0, valid); out[valid, N) = pad. The vector
// path is taken only for a whole chunk when the caller says the layout allows it.
template <DType D, int N>
__device__ __forceinline__ void load_floats(const void* row, int64_t col0, int valid, bool vector,
                                            float pad, float (&out)[N]) {
  using raw = typename DT<D>::raw;
  const raw* p = static_cast<const raw*>(row) + col0;
  if (vector && valid == N) {
    Pack<D, N> pk;
    load_pack<Cache::Normal>(pk, p);
    if constexpr (D == DType::BF16 && N % 2 == 0) {
      // A bf16 pair is one word: its low element is the word shifted up, its high element the
      // word masked (to_float per element would extract each half with a byte permute first).
      uint32_t words[N / 2];
      memcpy(words, &pk, sizeof(words));
#pragma unroll
      for (int e = 0; e < N; e += 2) {
        out[e] = __uint_as_float(words[e / 2] << 16);
        out[e + 1] = __uint_as_float(words[e / 2] & 0xffff0000u);
      }
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e) out[e] = DT<D>::to_float(pk.r[e]);
    }
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) out[e] = e < valid ? DT<D>::to_float(p[e]) : pad;
  }
}

template <int N>
__device__ __forceinline__ void load_floats(DType d, const void* row, int64_t col0, int valid,
                                            bool vector, float pad, float (&out)[N]) {
  switch (d) {
    case DType::BF16: load_floats<DType::BF16, N>(row, col0, valid, vector, pad, out); break;
    case DType::F16: load_floats<DType::F16, N>(row, col0, valid, vector, pad, out); break;
    default: load_floats<DType::F32, N>(row, col0, valid, vector, pad, out); break;
  }
}

// Stores in[0, valid) into elements [col0, col0 + valid) of `row`, each rounded once.
template <DType D, int N>
__device__ __forceinline__ void store_floats(void* row, int64_t col0, int valid, bool vector,
                                             const float (&in)[N]) {
  using raw = typename DT<D>::raw;
  raw* p = static_cast<raw*>(row) + col0;
  if (vector && valid == N) {
    Pack<D, N> pk;
#pragma unroll
    for (int e = 0; e < N; ++e) pk.r[e] = DT<D>::from_float(in[e]);
    store_pack<Cache::Normal>(p, pk);
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e)
      if (e < valid) p[e] = DT<D>::from_float(in[e]);
  }
}

template <int N>
__device__ __forceinline__ void store_floats(DType d, void* row, int64_t col0, int valid,
                                             bool vector, const float (&in)[N]) {
  switch (d) {
    case DType::BF16: store_floats<DType::BF16, N>(row, col0, valid, vector, in); break;
    case DType::F16: store_floats<DType::F16, N>(row, col0, valid, vector, in); break;
    default: store_floats<DType::F32, N>(row, col0, valid, vector, in); break;
  }
}

// One element of a run-time dtype vector (weights, bias).
__device__ __forceinline__ float load_one(DType d, const void* base, int64_t k) {
  switch (d) {
    case DType::BF16: return DT<DType::BF16>::to_float(static_cast<const uint16_t*>(base)[k]);
    case DType::F16: return DT<DType::F16>::to_float(static_cast<const uint16_t*>(base)[k]);
    default: return static_cast<const float*>(base)[k];
  }
}

__device__ __forceinline__ void store_one(DType d, void* base, int64_t k, float v) {
  switch (d) {
    case DType::BF16: static_cast<uint16_t*>(base)[k] = DT<DType::BF16>::from_float(v); break;
    case DType::F16: static_cast<uint16_t*>(base)[k] = DT<DType::F16>::from_float(v); break;
    default: static_cast<float*>(base)[k] = v; break;
  }
}

__device__ __forceinline__ int64_t load_label(const void* labels, bool labels_are_64, int64_t i) {
  return labels_are_64 ? static_cast<const int64_t*>(labels)[i]
                       : static_cast<int64_t>(static_cast<const int32_t*>(labels)[i]);
}

// Programmatic dependent launch (sm_90). A kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may be scheduled once every block of the
// kernel ahead of it has called allow_dependent_launch (or ended); wait_for_previous_grid then
// returns once that kernel has completed and its writes are visible. Both are no-ops for
// kernels launched without the attribute.
__device__ __forceinline__ void allow_dependent_launch() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

__device__ __forceinline__ void wait_for_previous_grid() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

// ---- reductions in a fixed order ---------------------------------------------------------------

__device__ __forceinline__ CeState shfl_down(const CeState& s, int offset) {
  CeState o;
  o.max = __shfl_down_sync(kFullMask, s.max, offset);
  o.sum_exp = __shfl_down_sync(kFullMask, s.sum_exp, offset);
  o.sum_logits = __shfl_down_sync(kFullMask, s.sum_logits, offset);
  o.argmax = static_cast<int64_t>(
      __shfl_down_sync(kFullMask, static_cast<long long>(s.argmax), offset));
  return o;
}

// The two stages of block_merge, for kernels that merge several sets of states with one
// barrier: warp_merge folds the lanes of a warp pairwise (the result in lane 0), merge_warps
// folds `warps` per-warp results in warp order.
__device__ __forceinline__ CeState warp_merge(CeState s) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) s = ce_merge(s, shfl_down(s, offset));
  return s;
}

__device__ __forceinline__ CeState merge_warps(const CeState* per_warp, int warps) {
  CeState s = per_warp[0];
  for (int w = 1; w < warps; ++w) s = ce_merge(s, per_warp[w]);
  return s;
}

// Merges the CeState of every thread of the block (blockDim.x a multiple of 32, <= 1024) in a
// fixed tree: lanes pairwise within each warp, then the warps in order by thread 0. The
// result is valid in thread 0 only. `scratch` holds 32 states; one __syncthreads inside.
__device__ __forceinline__ CeState block_merge(CeState s, CeState* scratch) {
  s = warp_merge(s);
  const int warps = static_cast<int>(blockDim.x) / 32;
  if (warps == 1) return s;
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) s = merge_warps(scratch, warps);
  return s;
}

// A group: `threads` consecutive threads of a block working on one row (threads a multiple of
// 32, <= 512; group g uses named barrier 1 + g when it spans more than one warp, so at most 15
// multi-warp groups per block).
struct Group {
  int index;    // g
  int thread;   // t, 0 <= t < threads
  int threads;  // T
};

__device__ __forceinline__ void group_barrier(const Group& g) {
  asm volatile("bar.sync %0, %1;" ::"r"(1 + g.index), "r"(g.threads) : "memory");
}

// Warp shuffles of the values a group reduces: one shuffle per component.
__device__ __forceinline__ float shfl_down(float v, int offset) {
  return __shfl_down_sync(kFullMask, v, offset);
}
__device__ __forceinline__ float2 shfl_down(float2 v, int offset) {
  return make_float2(__shfl_down_sync(kFullMask, v.x, offset),
                     __shfl_down_sync(kFullMask, v.y, offset));
}
__device__ __forceinline__ float4 shfl_down(float4 v, int offset) {
  return make_float4(__shfl_down_sync(kFullMask, v.x, offset),
                     __shfl_down_sync(kFullMask, v.y, offset),
                     __shfl_down_sync(kFullMask, v.z, offset),
                     __shfl_down_sync(kFullMask, v.w, offset));
}
__device__ __forceinline__ float shfl_first(float v) { return __shfl_sync(kFullMask, v, 0); }
__device__ __forceinline__ float2 shfl_first(float2 v) {
  return make_float2(__shfl_sync(kFullMask, v.x, 0), __shfl_sync(kFullMask, v.y, 0));
}
__device__ __forceinline__ float4 shfl_first(float4 v) {
  return make_float4(__shfl_sync(kFullMask, v.x, 0), __shfl_sync(kFullMask, v.y, 0),
                     __shfl_sync(kFullMask, v.z, 0), __shfl_sync(kFullMask, v.w, 0));
}

struct SumMerge {
  __device__ float operator()(float a, float b) const { return a + b; }
  __device__ float2 operator()(float2 a, float2 b) const { return make_float2(a.x + b.x, a.y + b.y); }
  __device__ float4 operator()(float4 a, float4 b) const {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
};
// Sums whose warps group_reduce folds pairwise rather than in order (below).
struct PairwiseSumMerge : SumMerge {};
// (count, mean, M2) in x, y, z.
struct ChanMerge {
  __device__ float4 operator()(float4 a, float4 b) const {
    const Chan r = chan_merge(Chan{a.x, a.y, a.z}, Chan{b.x, b.y, b.z});
    return make_float4(r.n, r.mean, r.m2, 0.0f);
  }
};

// Shared memory of one group's reductions of values of type V: [parity][warp].
constexpr int kMaxGroupWarps = 16;
template <class V>
using GroupScratch = V[2][kMaxGroupWarps];

// Reduces v (float, float2 or float4) over the group in a fixed order (lanes pairwise, then
// the warps: in order, or pairwise with PairwiseSumMerge) and returns the result to every
// thread of the group. Two scratch buffers alternate (`parity`), so one barrier per reduction
// suffices: a buffer is written again only after every thread of the group has passed the next
// reduction's barrier, hence finished reading it. Every call is a barrier of the group (a warp
// barrier for a one-warp group): memory the group's threads accessed before it is ordered
// before what they access after it. (norm_forward.cu's equal_count_chan_reduce folds its warps
// with the same pairwise tree.)
template <class V, class Merge>
__device__ __forceinline__ V group_reduce(V v, const Group& g, GroupScratch<V>& scratch, int& parity,
                                          Merge merge) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = merge(v, shfl_down(v, offset));
  v = shfl_first(v);
  const int warps = g.threads / 32;
  if (warps == 1) {
    __syncwarp();
    return v;
  }
  if ((g.thread & 31) == 0) scratch[parity][g.thread / 32] = v;
  group_barrier(g);
  V r;
  if constexpr (std::is_same_v<Merge, PairwiseSumMerge>) {
    // Lane w of every warp takes warp w's sum (0 past the last warp) and the warps fold the
    // lanes pairwise, the same tree in every warp, so every thread has the same bits: a load
    // and a shuffle a level instead of a load and an add a warp (16 warps: 16 loads and 15
    // dependent adds of each component, about 130 instructions a row in every warp).
    const int lane = g.thread & 31;
    r = lane < warps ? scratch[parity][lane] : V{};
#pragma unroll
    for (int offset = kMaxGroupWarps / 2; offset > 0; offset >>= 1)
      if (offset < warps) r = merge(r, shfl_down(r, offset));
    r = shfl_first(r);
  } else {
    r = scratch[parity][0];
    for (int w = 1; w < warps; ++w) r = merge(r, scratch[parity][w]);
  }
  parity ^= 1;
  return r;
}

}  // namespace switchyard::te

#endif
