// Device pieces every cross-entropy kernel of te shares (ce_kernels.cu, ce_slice_kernels.cu):
// 16-byte chunks of a row, the row's label, the row's outputs and the gradient element stores.
// Included by .cu files only.
#ifndef SWITCHYARD_TE_CE_DEVICE_CUH
#define SWITCHYARD_TE_CE_DEVICE_CUH

#include "ce_math.hpp"
#include "kernel_args.hpp"
#include "te_device.cuh"
#include "te_math.hpp"

#include <cstdint>
#include <cstring>

namespace switchyard::te {

template <DType D>
__host__ __device__ constexpr int chunk_elements() {
  return 16 / static_cast<int>(sizeof(typename DT<D>::raw));
}

// Chunk k of a row of logits; elements past the row hold -inf. The vector path is taken for a
// whole chunk of a 16-byte aligned row.
template <Cache C, DType D>
__device__ __forceinline__ void load_chunk(Pack<D, chunk_elements<D>()>& pk,
                                           const typename DT<D>::raw* row, int64_t k,
                                           int64_t columns, bool vector) {
  constexpr int VEC = chunk_elements<D>();
  const int64_t col0 = k * VEC;
  if (vector && col0 + VEC <= columns) {
    load_pack<C>(pk, row + col0);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) pk.r[e] = col0 + e < columns ? row[col0 + e] : DT<D>::kNegInf;
  }
}

template <DType D>
__device__ __forceinline__ void unpack(const Pack<D, chunk_elements<D>()>& pk,
                                       float (&v)[chunk_elements<D>()]) {
  if constexpr (D == DType::BF16) {
    // A bf16 is the high half of its fp32: per 32-bit word of two, the low element is the
    // word shifted up and the high one the word masked, one instruction each (converting
    // each 16-bit element alone costs a zero-extension and a shift). The same values.
    uint32_t w[chunk_elements<D>() / 2];
    memcpy(w, &pk, sizeof w);
#pragma unroll
    for (int k = 0; k < chunk_elements<D>() / 2; ++k) {
      v[2 * k] = __uint_as_float(w[k] << 16);
      v[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int e = 0; e < chunk_elements<D>(); ++e) v[e] = DT<D>::to_float(pk.r[e]);
  }
}

__device__ __forceinline__ int valid_in_chunk(int64_t k, int vec, int64_t columns) {
  const int64_t left = columns - k * vec;
  return left >= vec ? vec : static_cast<int>(left);
}

// What every kernel needs to know about a row's label.
struct RowLabel {
  int64_t label;
  bool ignored;
  bool owned;          // 0 <= label < V and not ignored: some rank holds its logit
  int64_t local_col;   // the label's column on this rank, -1 when another rank (or none)
};

// The label of row `row` (a load from global memory).
__device__ __forceinline__ int64_t label_of_row(const CeKernelArgs& a, int64_t row) {
  return load_label(a.labels, a.labels_are_64 != 0, row);
}

// What follows from a row's label (already loaded: label_of_row).
__device__ __forceinline__ RowLabel row_label_of(const CeKernelArgs& a, int64_t label) {
  RowLabel r;
  r.label = label;
  r.ignored = a.ignore != 0 && r.label == a.ignore_index;
  r.owned = !r.ignored && r.label >= 0 && r.label < a.vocab_size;
  const int64_t col = r.label - a.vocab_start;
  r.local_col = r.owned && col >= 0 && col < a.vocab_local ? col : -1;
  return r;
}

__device__ __forceinline__ RowLabel row_label(const CeKernelArgs& a, int64_t row) {
  return row_label_of(a, label_of_row(a, row));
}

// The global id of a thread-merged argmax (column 0 when the row is all -inf or NaN).
__device__ __forceinline__ int64_t global_argmax(const CeKernelArgs& a, int64_t local) {
  return (local == kNoArgmax ? 0 : local) + a.vocab_start;
}

// Writes lse, loss and argmax of a row (tp_size 1: the row's statistics are global).
__device__ __forceinline__ float write_row_result(const CeKernelArgs& a, int64_t row,
                                                  const CeState& st, float target,
                                                  const RowLabel& lab) {
  const CeRowResult r =
      ce_finish(st.max, st.sum_exp, st.sum_logits, target, lab.owned, lab.ignored, a.scalars);
  a.lse[row] = r.lse;
  a.loss[row] = r.loss;
  if (a.argmax != nullptr) a.argmax[row] = global_argmax(a, st.argmax);
  return r.lse;
}

// This rank's statistics of a row for the tensor-parallel all-gather.
__device__ __forceinline__ void write_row_stats(const CeKernelArgs& a, int64_t row,
                                                const CeState& st, float target) {
  CeRowStats s;
  s.max = st.max;
  s.sum_exp = st.sum_exp;
  s.target = target;
  s.sum_logits = st.sum_logits;
  s.argmax = global_argmax(a, st.argmax);
  a.stats[row] = s;
}

// The per-row constants of g * (p - q).
struct GradRow {
  float g;
  float neg_lse_log2e;
  float q_other;   // s / V
  float q_target;  // s / V + 1 - s
  int64_t target_col;
};

__device__ __forceinline__ GradRow grad_row(const CeKernelArgs& a, float g, float lse,
                                            const RowLabel& lab) {
  GradRow r;
  r.g = g;
  r.neg_lse_log2e = -lse * kLog2e;
  r.q_other = a.scalars.uniform;
  r.q_target = a.scalars.uniform + a.scalars.one_minus_smoothing;
  r.target_col = lab.local_col;
  return r;
}

// Gradient of chunk k from its logits v, stored (rounded once) into the grad row. Elements
// past the row are not stored. Every element is g * (exp(z - lse) - q) with q = q_other, the
// label's element is formed again with q_target (same formula, so the same bits as choosing q
// per element, without a 64-bit compare per element).
template <DType G, int VEC>
__device__ __forceinline__ void store_grad_chunk(typename DT<G>::raw* out, int64_t k,
                                                 const float (&v)[VEC], const GradRow& r,
                                                 int64_t columns, bool vector) {
  const int64_t col0 = k * VEC;
  Pack<G, VEC> pk;
#pragma unroll
  for (int e = 0; e < VEC; ++e)
    pk.r[e] = DT<G>::from_float(ce_grad_value(v[e], r.neg_lse_log2e, r.g, r.q_other));
  const int64_t at = r.target_col - col0;
  if (at >= 0 && at < VEC) {
#pragma unroll
    for (int e = 0; e < VEC; ++e)
      if (e == at) pk.r[e] = DT<G>::from_float(ce_grad_value(v[e], r.neg_lse_log2e, r.g, r.q_target));
  }
  if (vector && col0 + VEC <= columns) {
    store_pack<Cache::Streaming>(out + col0, pk);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e)
      if (col0 + e < columns) out[col0 + e] = pk.r[e];
  }
}

// Two gradient elements rounded to a 16-bit grad dtype and packed into one word (lo in the
// low half): one cvt.rn.{bf16x2,f16x2}.f32 instead of two conversions and a merge. Each
// half is rounded exactly as DT<G>::from_float rounds it.
template <DType G>
__device__ __forceinline__ uint32_t pack_grad2(float lo, float hi) {
  static_assert(G != DType::F32, "16-bit grad dtypes only");
  uint32_t w;
  if constexpr (G == DType::BF16) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    memcpy(&w, &h, 4);
  } else {
    const __half2 h = __floats2half2_rn(lo, hi);
    memcpy(&w, &h, 4);
  }
  return w;
}

// The gradient of a whole chunk at a pack-aligned `out`, every element with q = q_other (the
// label's element is stored again afterwards by its thread: store_grad_target), as one
// streaming vector store (16 bytes, 32 for f32 grads of 16-bit logits, 8 for 16-bit grads of
// f32 logits). No column or alignment test: the caller knows the chunk is whole and aligned.
template <DType G, bool kSmoothing, int VEC>
__device__ __forceinline__ void store_grad_whole(typename DT<G>::raw* out, const float (&v)[VEC],
                                                 const GradRow& r) {
  float d[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) d[e] = ce_grad_other<kSmoothing>(v[e], r.neg_lse_log2e, r.g, r.q_other);
  Pack<G, VEC> pk;
  if constexpr (G == DType::F32) {
    memcpy(&pk, d, sizeof d);
  } else {
    uint32_t w[VEC / 2];
#pragma unroll
    for (int e = 0; e < VEC / 2; ++e) w[e] = pack_grad2<G>(d[2 * e], d[2 * e + 1]);
    memcpy(&pk, w, sizeof w);
  }
  store_pack<Cache::Streaming>(out, pk);
}

// The label's gradient element, g (p - q_target), at column `col` of the grad row, from its
// logit z: stored after (same thread, same address, so program order makes it the final
// value) the q_other value its chunk was written with.
template <DType G>
__device__ __forceinline__ void store_grad_target(typename DT<G>::raw* out, int64_t col, float z,
                                                  const GradRow& r) {
  out[col] = DT<G>::from_float(ce_grad_value(z, r.neg_lse_log2e, r.g, r.q_target));
}

// Zeros for chunks [first, first + count) of a gradient row, each thread taking chunks
// first + tid, first + tid + T, ... (an ignored row's gradient, written without reading the
// logits).
template <DType G, int VEC>
__device__ __forceinline__ void zero_grad_chunks(typename DT<G>::raw* out, int64_t first,
                                                 int64_t count, int64_t columns, bool vector) {
  Pack<G, VEC> pk;
#pragma unroll
  for (int e = 0; e < VEC; ++e) pk.r[e] = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const int64_t col0 = (first + i) * VEC;
    if (vector && col0 + VEC <= columns) {
      store_pack<Cache::Streaming>(out + col0, pk);
    } else {
      for (int e = 0; e < VEC && col0 + e < columns; ++e) out[col0 + e] = 0;
    }
  }
}

template <DType G, int VEC>
__device__ __forceinline__ void zero_grad_row(typename DT<G>::raw* out, int64_t chunks,
                                              int64_t columns, bool vector) {
  zero_grad_chunks<G, VEC>(out, 0, chunks, columns, vector);
}

}  // namespace switchyard::te

#endif
