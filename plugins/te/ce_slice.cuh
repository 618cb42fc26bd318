// What te's two statistics kernels over slices share (ce_slice_kernels.cu: one block per
// slice, the slices of a row one cluster; ce_stream_kernels.cu: one block per row at a time,
// its slices one after another). Both fold a slice's groups, merge a block's threads and merge
// the slices in the same order, so a row's lse, loss and argmax have the same bits whichever
// kernel ran. Included by .cu files only.
#ifndef SWITCHYARD_TE_CE_SLICE_CUH
#define SWITCHYARD_TE_CE_SLICE_CUH

#include "ce_device.cuh"
#include "ce_math.hpp"
#include "ce_plan.hpp"

#include <cstdint>

namespace switchyard::te {

// A slice's contribution to its row.
struct SlicePartial {
  float max;
  float sum_exp;
  float sum_logits;
  float target;  // the label's logit in the slice that holds it, 0 in the others
  int64_t argmax;
};

// The row so far after slice `rank`'s partial: rank 0 starts it, the others are merged in
// rank order. The targets are added in the same order (only the owner's is not 0).
__device__ __forceinline__ void fold_slice(SlicePartial& row, const SlicePartial& slice, int rank) {
  if (rank == 0) {
    row = slice;
    return;
  }
  const CeState merged = ce_merge(CeState{row.max, row.sum_exp, row.sum_logits, row.argmax},
                                  CeState{slice.max, slice.sum_exp, slice.sum_logits, slice.argmax});
  row = SlicePartial{merged.max, merged.sum_exp, merged.sum_logits, row.target + slice.target,
                     merged.argmax};
}

// Geometry of slice `rank` of a row: its first chunk, its chunks (padded groups past them
// hold -inf) and its columns.
struct SliceSpan {
  int64_t first;  // chunk
  int chunks;
  int elements;
};

template <int VEC>
__device__ __forceinline__ SliceSpan slice_span(const CeKernelArgs& a, int rank) {
  SliceSpan s;
  s.first = static_cast<int64_t>(rank) * a.slice_chunks;
  s.chunks = static_cast<int>(max(int64_t{0}, min(int64_t{a.slice_chunks}, a.chunks - s.first)));
  s.elements = static_cast<int>(
      max(int64_t{0}, min(int64_t{s.chunks} * VEC, a.vocab_local - s.first * VEC)));
  return s;
}

// max of two packed pairs of 16-bit logits, per half (max.bf16x2 / max.f16x2 drop a NaN as
// fmaxf does).
template <DType D>
__device__ __forceinline__ uint32_t packed_max(uint32_t a, uint32_t b) {
  uint32_t r;
  if constexpr (D == DType::BF16)
    asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  else
    asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// Pairwise tree over words [Lo, Lo + Len) (recursion, not loops: nothing depends on unrolling).
template <DType D, int Lo, int Len, int W>
__device__ __forceinline__ uint32_t packed_tree_max(const uint32_t (&w)[W]) {
  if constexpr (Len == 1)
    return w[Lo];
  else
    return packed_max<D>(packed_tree_max<D, Lo, Len / 2>(w), packed_tree_max<D, Lo + Len / 2, Len / 2>(w));
}

// The largest of a thread's group of logits. 16-bit logits are compared packed, two per
// instruction on the raw words (the largest 16-bit value converts to the largest float), so
// the group costs 16 max instructions instead of 31.
template <DType D>
__device__ __forceinline__ float group_max(const Pack<D, chunk_elements<D>()> (&pk)[kCeSliceUnroll],
                                           const float (&v)[kCeSliceUnroll * chunk_elements<D>()]) {
  if constexpr (D == DType::F32) {
    return ce_tree_max<0, kCeSliceUnroll * chunk_elements<D>()>(v);
  } else {
    constexpr int W = kCeSliceUnroll * 4;  // 32-bit words of the group
    uint32_t w[W];
    memcpy(w, pk, sizeof w);
    const uint32_t m = packed_tree_max<D, 0, W>(w);
    Pack<D, 2> last;
    memcpy(&last, &m, 4);
    return fmaxf(DT<D>::to_float(last.r[0]), DT<D>::to_float(last.r[1]));
  }
}

// A thread's group of chunks as floats, chunk u's elements at [u VEC, (u + 1) VEC).
template <DType D>
__device__ __forceinline__ void unpack_group(const Pack<D, chunk_elements<D>()> (&pk)[kCeSliceUnroll],
                                             float (&v)[kCeSliceUnroll * chunk_elements<D>()]) {
  constexpr int VEC = chunk_elements<D>();
#pragma unroll
  for (int u = 0; u < kCeSliceUnroll; ++u) {
    float c[VEC];
    unpack(pk[u], c);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[u * VEC + k] = c[k];
  }
}

// Folds one group of a thread (its kCeSliceUnroll chunks g * 4T + u * T + t) into its run.
// `group_first` is the slice-relative chunk of u = 0, `elements` the slice's columns (with
// smoothing, only columns of the row enter the sum of logits; the -inf padding does not).
template <DType D, bool kSmoothing>
__device__ __forceinline__ void fold_group(CeRun& run, const Pack<D, chunk_elements<D>()> (&pk)[kCeSliceUnroll],
                                           int group, int group_first, int T, int elements) {
  constexpr int VEC = chunk_elements<D>();
  constexpr int N = kCeSliceUnroll * VEC;
  float v[N];
  unpack_group<D>(pk, v);
  bool in_row[N];
  if constexpr (kSmoothing) {
#pragma unroll
    for (int u = 0; u < kCeSliceUnroll; ++u)
#pragma unroll
      for (int k = 0; k < VEC; ++k) in_row[u * VEC + k] = (group_first + u * T) * VEC + k < elements;
  }
  ce_run_add_max<kSmoothing>(run, v, group_max<D>(pk, v), group, in_row);
}

// The column (slice-relative) of the first element equal to `max` among a thread's chunks of
// its group `pk`; `group_first` as in fold_group.
template <DType D>
__device__ __forceinline__ int64_t group_argmax(const Pack<D, chunk_elements<D>()> (&pk)[kCeSliceUnroll],
                                               float max, int group_first, int T) {
  constexpr int VEC = chunk_elements<D>();
  constexpr int N = kCeSliceUnroll * VEC;
  float v[N];
  unpack_group<D>(pk, v);
  const int at = ce_first_equal(v, max);
  const int u = at / VEC;
  return static_cast<int64_t>(group_first + u * T) * VEC + (at - u * VEC);
}

}  // namespace switchyard::te

#endif
