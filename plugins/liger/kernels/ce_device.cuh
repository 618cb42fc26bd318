// The cross-entropy kernels and their dtype dispatch (launches are in ce_kernels.cu).
//
// Liger-Kernel's cross entropy as CUDA C++: one block per row; the first pass keeps an online
// max and sum of exponentials (plus the sum of logits for smoothing and, on request, the
// argmax); with the gradient in forward a second pass of the same block writes
// grad_scale * (p - q) (over the logits when they alias). Tensor parallelism splits the row
// pass from the finalisation around the host's collectives; the per-token backward computes the
// gradient from lse (one read, one write).
//
// Determinism: every thread owns fixed chunks of the row and folds them in column order;
// block reductions are fixed trees (device_io.cuh). No floating-point atomics.
#ifndef SWITCHYARD_LIGER_KERNELS_CE_DEVICE_CUH
#define SWITCHYARD_LIGER_KERNELS_CE_DEVICE_CUH

#include "device_io.cuh"

#include <cstdint>
#include <type_traits>

namespace switchyard::liger {
// Internal linkage: exactly one translation unit per binary includes this (ce_kernels.cu, or
// the tests' emulator).
namespace {

using namespace device;

constexpr int kUnroll = 4;              // chunks a thread has in flight per row pass
constexpr int kElementwiseThreads = 256;
constexpr int64_t kNoIndex = INT64_MAX;

// What a row's label means (docs/semantics.md).
struct RowLabel {
  int64_t label;
  bool ignored;
  bool owned;             // some rank owns it: 0 <= label < V
  int64_t local_target;   // this rank's column of the label, or -1
};

__device__ __forceinline__ RowLabel row_label(const CeRows& r, int64_t row) {
  RowLabel l;
  l.label = load_label(r.labels, r.labels64, row);
  l.ignored = r.use_ignore_index && l.label == r.ignore_index;
  l.owned = !l.ignored && l.label >= 0 && l.label < r.vocab_size;
  const int64_t column = l.label - r.vocab_start;
  l.local_target = l.owned && column >= 0 && column < r.vocab_local ? column : -1;
  return l;
}

// loss = (1 - s)(lse - z_t) + s (lse - mean z) [+ zs lse^2]; z_t is the max when no rank owns
// the label.
__device__ __forceinline__ float row_loss(const CeRows& r, float lse, float z_target,
                                          float sum_z) {
  float loss = mul_rn(1.0f - r.smoothing, sub_rn(lse, z_target));
  if (r.smoothing != 0.0f) {
    const float mean_z = div_rn(sum_z, static_cast<float>(r.vocab_size));
    loss = add_rn(loss, mul_rn(r.smoothing, sub_rn(lse, mean_z)));
  }
  if (r.z_loss_scale != 0.0f) loss = add_rn(loss, mul_rn(mul_rn(r.z_loss_scale, lse), lse));
  return loss;
}

// ---- the online row state ------------------------------------------------------------------

struct RowState {
  float max;      // running max
  float sum_exp;  // sum of exp(z - max)
  float sum_z;    // sum of z
  float arg_value;
  int64_t arg_index;  // lowest column attaining arg_value; kNoIndex before the first element
};

__device__ __forceinline__ RowState empty_state() {
  return RowState{-INFINITY, 0.0f, 0.0f, -INFINITY, kNoIndex};
}

// True when (av, ai) is the better argmax candidate: NaN counts as the maximum (torch.argmax),
// ties go to the lower index. Symmetric, so both partners of a shuffle pick the same.
__device__ __forceinline__ bool first_wins(float av, int64_t ai, float bv, int64_t bi) {
  if (bi == kNoIndex) return true;
  if (ai == kNoIndex) return false;
  const bool a_nan = is_nan(av), b_nan = is_nan(bv);
  if (a_nan != b_nan) return a_nan;
  if (!a_nan && av != bv) return av > bv;
  return ai < bi;
}

template <bool kArgmax>
__device__ __forceinline__ RowState merge(const RowState& a, const RowState& b) {
  RowState r;
  r.max = fmaxf(a.max, b.max);
  const float da = a.max == r.max ? a.sum_exp : mul_rn(a.sum_exp, exp_minus(a.max, r.max));
  const float db = b.max == r.max ? b.sum_exp : mul_rn(b.sum_exp, exp_minus(b.max, r.max));
  r.sum_exp = add_rn(da, db);
  r.sum_z = add_rn(a.sum_z, b.sum_z);
  if (kArgmax && !first_wins(a.arg_value, a.arg_index, b.arg_value, b.arg_index)) {
    r.arg_value = b.arg_value;
    r.arg_index = b.arg_index;
  } else {
    r.arg_value = a.arg_value;
    r.arg_index = a.arg_index;
  }
  return r;
}

// Folds n <= 8 elements (columns col0...) into the state, in column order.
template <bool kArgmax>
__device__ __forceinline__ void absorb(RowState& s, const float (&v)[kChunk], int n,
                                       int64_t col0) {
  float chunk_max = -INFINITY;
#pragma unroll
  for (int k = 0; k < kChunk; ++k)
    if (k < n) chunk_max = fmaxf(chunk_max, v[k]);
  if (chunk_max > s.max) {
    s.sum_exp = mul_rn(s.sum_exp, exp_minus(s.max, chunk_max));
    s.max = chunk_max;
  }
  if (s.max != -INFINITY) {
#pragma unroll
    for (int k = 0; k < kChunk; ++k)
      if (k < n) s.sum_exp = add_rn(s.sum_exp, exp_minus(v[k], s.max));
  }
#pragma unroll
  for (int k = 0; k < kChunk; ++k)
    if (k < n) s.sum_z = add_rn(s.sum_z, v[k]);
  if (kArgmax) {
#pragma unroll
    for (int k = 0; k < kChunk; ++k) {
      if (k < n && (s.arg_index == kNoIndex || v[k] > s.arg_value ||
                    (is_nan(v[k]) && !is_nan(s.arg_value)))) {
        s.arg_value = v[k];
        s.arg_index = col0 + k;
      }
    }
  }
}

// This thread's share of one row (starting at element `offset` of the logits).
template <Dt L, bool kAligned, bool kArgmax>
__device__ __forceinline__ RowState scan_row(const CeRows& r, int64_t offset) {
  const int64_t full = r.vocab_local / kChunk;
  const int rem = static_cast<int>(r.vocab_local % kChunk);
  const int64_t threads = block_dim();
  RowState s = empty_state();
  for (int64_t c0 = thread_x(); c0 < full; c0 += threads * kUnroll) {
    float v[kUnroll][kChunk];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t c = c0 + u * threads;
      if (c < full) load8<L, kAligned>(r.logits, offset + c * kChunk, v[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t c = c0 + u * threads;
      if (c < full) absorb<kArgmax>(s, v[u], kChunk, c * kChunk);
    }
  }
  // The partial last chunk goes to the thread whose turn it is, after its other chunks.
  if (rem != 0 && thread_x() == full % threads) {
    float v[kChunk];
    load_n<L>(r.logits, offset + full * kChunk, rem, v);
    absorb<kArgmax>(s, v, rem, full * kChunk);
  }
  return s;
}

struct StateScratch {
  float max[32];
  float sum_exp[32];
  float sum_z[32];
  float arg_value[32];
  long long arg_index[32];
};

// The row's state on every thread (the same bits everywhere).
template <bool kArgmax>
__device__ __forceinline__ RowState block_merge(RowState s, StateScratch& scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    RowState other;
    other.max = shfl_xor(s.max, offset);
    other.sum_exp = shfl_xor(s.sum_exp, offset);
    other.sum_z = shfl_xor(s.sum_z, offset);
    if (kArgmax) {
      other.arg_value = shfl_xor(s.arg_value, offset);
      other.arg_index = static_cast<int64_t>(
          shfl_xor(static_cast<long long>(s.arg_index), offset));
    } else {
      other.arg_value = s.arg_value;
      other.arg_index = s.arg_index;
    }
    s = merge<kArgmax>(s, other);
  }
  const int warp = static_cast<int>(thread_x()) / 32;
  const int warps = static_cast<int>(block_dim()) / 32;
  if (thread_x() % 32 == 0) {
    scratch.max[warp] = s.max;
    scratch.sum_exp[warp] = s.sum_exp;
    scratch.sum_z[warp] = s.sum_z;
    scratch.arg_value[warp] = s.arg_value;
    scratch.arg_index[warp] = static_cast<long long>(s.arg_index);
  }
  sync_threads();
  RowState total{scratch.max[0], scratch.sum_exp[0], scratch.sum_z[0], scratch.arg_value[0],
                 static_cast<int64_t>(scratch.arg_index[0])};
  for (int w = 1; w < warps; ++w) {
    const RowState next{scratch.max[w], scratch.sum_exp[w], scratch.sum_z[w],
                        scratch.arg_value[w], static_cast<int64_t>(scratch.arg_index[w])};
    total = merge<kArgmax>(total, next);
  }
  sync_threads();
  return total;
}

template <Dt L, bool kArgmax>
__device__ __forceinline__ RowState block_row_state(const CeRows& r, int64_t offset,
                                                    StateScratch& scratch) {
  const RowState mine = r.logits_aligned ? scan_row<L, true, kArgmax>(r, offset)
                                         : scan_row<L, false, kArgmax>(r, offset);
  return block_merge<kArgmax>(mine, scratch);
}

__device__ __forceinline__ float row_lse(const RowState& s) {
  return add_rn(s.max, log_of(s.sum_exp));
}

// ---- the gradient pass ---------------------------------------------------------------------

// grad_j = a p_j - b, and - c more at the target column: a = g (1 + 2 zs lse), b = g s / V,
// c = g (1 - s).
struct GradCoefficients {
  float lse;
  float a;
  float b;
  float c;
  int64_t target;  // local column, or -1
};

__device__ __forceinline__ GradCoefficients grad_coefficients(const CeRows& r, float g, float lse,
                                                              int64_t local_target) {
  GradCoefficients k;
  k.lse = lse;
  const float z_factor =
      r.z_loss_scale != 0.0f ? add_rn(1.0f, mul_rn(2.0f * r.z_loss_scale, lse)) : 1.0f;
  k.a = mul_rn(g, z_factor);
  k.b = mul_rn(g, r.smoothing_over_v);
  k.c = mul_rn(g, 1.0f - r.smoothing);
  k.target = local_target;
  return k;
}

__device__ __forceinline__ void grad_chunk(float (&v)[kChunk], int64_t col0,
                                           const GradCoefficients& k) {
#pragma unroll
  for (int e = 0; e < kChunk; ++e) v[e] = fma_rn(k.a, exp_minus(v[e], k.lse), -k.b);
  if (k.target >= col0 && k.target < col0 + kChunk) {
#pragma unroll
    for (int e = 0; e < kChunk; ++e)
      if (col0 + e == k.target) v[e] = sub_rn(v[e], k.c);
  }
}

// Writes this thread's chunks of the row's gradient. Each chunk is read (when not `zero`) and
// then written by the same thread, so the gradient may be the logits themselves.
template <Dt L, Dt G, bool kAligned>
__device__ __forceinline__ void grad_row(const CeRows& r, const CeGradOut& out, int64_t row,
                                         const GradCoefficients& k, bool zero) {
  const int64_t in = row * r.logits_stride;
  const int64_t at = row * out.grad_stride;
  const int64_t full = r.vocab_local / kChunk;
  const int rem = static_cast<int>(r.vocab_local % kChunk);
  const int64_t threads = block_dim();
  const bool has_tail = rem != 0 && thread_x() == full % threads;
  if (zero) {
    float zeros[kChunk];
#pragma unroll
    for (int e = 0; e < kChunk; ++e) zeros[e] = 0.0f;
    for (int64_t c = thread_x(); c < full; c += threads)
      store8<G, kAligned>(out.grad, at + c * kChunk, zeros);
    if (has_tail) store_n<G>(out.grad, at + full * kChunk, rem, zeros);
    return;
  }
  for (int64_t c0 = thread_x(); c0 < full; c0 += threads * kUnroll) {
    float v[kUnroll][kChunk];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t c = c0 + u * threads;
      if (c < full) load8<L, kAligned>(r.logits, in + c * kChunk, v[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t c = c0 + u * threads;
      if (c < full) {
        grad_chunk(v[u], c * kChunk, k);
        store8<G, kAligned>(out.grad, at + c * kChunk, v[u]);
      }
    }
  }
  if (has_tail) {
    float v[kChunk];
    load_n<L>(r.logits, in + full * kChunk, rem, v);
    grad_chunk(v, full * kChunk, k);
    store_n<G>(out.grad, at + full * kChunk, rem, v);
  }
}

template <Dt L, Dt G>
__device__ __forceinline__ void block_grad_row(const CeRows& r, const CeGradOut& out,
                                               int64_t row, const GradCoefficients& k,
                                               bool zero) {
  if (r.logits_aligned && out.grad_aligned)
    grad_row<L, G, true>(r, out, row, k, zero);
  else
    grad_row<L, G, false>(r, out, row, k, zero);
}

// ---- kernels --------------------------------------------------------------------------------

__global__ void check_labels_kernel(CeRows r, unsigned long long* first_bad) {
  for (int64_t i = block_x() * static_cast<int64_t>(block_dim()) + thread_x(); i < r.rows;
       i += static_cast<int64_t>(grid_dim()) * block_dim()) {
    const int64_t t = load_label(r.labels, r.labels64, i);
    const bool ignored = r.use_ignore_index && t == r.ignore_index;
    if (!ignored && (t < 0 || t >= r.vocab_size))
      atomic_min(first_bad, static_cast<unsigned long long>(i));
  }
}

// kPartial: tensor parallel, write this rank's statistics to the scratch; else the row's
// loss, lse and argmax.
template <Dt L, bool kArgmax, bool kPartial>
__global__ void __launch_bounds__(kMaxRowThreads, kMinRowBlocks)
    stats_kernel(CeRows r, CeForwardOut out, CeTpScratch tp) {
  SY_LIGER_SHARED StateScratch scratch;
  const int64_t row = block_x();
  const int64_t offset = row * r.logits_stride;
  const RowLabel label = row_label(r, row);
  float z_target = 0.0f;
  if (thread_x() == 0 && label.local_target >= 0)
    z_target = load1<L>(r.logits, offset + label.local_target);
  const RowState s = block_row_state<L, kArgmax>(r, offset, scratch);
  if (thread_x() != 0) return;
  if (kPartial) {
    tp.local_max[row] = s.max;
    tp.local_sum_exp[row] = s.sum_exp;
    tp.packed[r.rows + row] = z_target;  // 0 unless this rank owns the label
    tp.packed[2 * r.rows + row] = s.sum_z;
    if (kArgmax) tp.candidates[row] = s.arg_index;
    return;
  }
  const float lse = row_lse(s);
  out.lse[row] = lse;
  out.loss[row] = label.ignored ? 0.0f : row_loss(r, lse, label.owned ? z_target : s.max, s.sum_z);
  if (kArgmax) out.argmax[row] = r.vocab_start + s.arg_index;
}

template <Dt L, Dt G, bool kArgmax>
__global__ void __launch_bounds__(kMaxRowThreads, kMinRowBlocks)
    fused_kernel(CeRows r, CeForwardOut out, CeGradOut grad) {
  SY_LIGER_SHARED StateScratch scratch;
  const int64_t row = block_x();
  const int64_t offset = row * r.logits_stride;
  const RowLabel label = row_label(r, row);
  // Read before the barriers of block_row_state: the second pass may overwrite it.
  float z_target = 0.0f;
  if (thread_x() == 0 && label.local_target >= 0)
    z_target = load1<L>(r.logits, offset + label.local_target);
  const RowState s = block_row_state<L, kArgmax>(r, offset, scratch);
  const float lse = row_lse(s);
  if (thread_x() == 0) {
    out.lse[row] = lse;
    out.loss[row] =
        label.ignored ? 0.0f : row_loss(r, lse, label.owned ? z_target : s.max, s.sum_z);
    if (kArgmax) out.argmax[row] = r.vocab_start + s.arg_index;
  }
  const float g = label.ignored ? 0.0f : grad.scale[row];
  block_grad_row<L, G>(r, grad, row, grad_coefficients(r, g, lse, label.local_target),
                       label.ignored);
}

template <Dt L, Dt G>
__global__ void __launch_bounds__(kMaxRowThreads, kMinRowBlocks)
    gradient_kernel(CeRows r, CeGradOut grad) {
  const int64_t row = block_x();
  const RowLabel label = row_label(r, row);
  const float g = label.ignored ? 0.0f : grad.scale[row];
  const float lse = grad.lse[row];
  block_grad_row<L, G>(r, grad, row, grad_coefficients(r, g, lse, label.local_target),
                       label.ignored);
}

__global__ void tp_combine_kernel(CeRows r, CeTpScratch tp) {
  const int64_t i = block_x() * static_cast<int64_t>(block_dim()) + thread_x();
  if (i >= r.rows) return;
  const float local = tp.local_max[i];
  const float global = tp.global_max[i];
  tp.packed[i] = local == -INFINITY ? 0.0f
                                    : mul_rn(tp.local_sum_exp[i], exp_minus(local, global));
  if (r.argmax)
    tp.candidates[i] = local == global ? r.vocab_start + tp.candidates[i] : kNoIndex;
}

__global__ void tp_finalize_kernel(CeRows r, CeTpScratch tp, CeForwardOut out) {
  const int64_t i = block_x() * static_cast<int64_t>(block_dim()) + thread_x();
  if (i >= r.rows) return;
  const RowLabel label = row_label(r, i);
  const float global_max = tp.global_max[i];
  const float lse = add_rn(global_max, log_of(tp.packed[i]));
  out.lse[i] = lse;
  out.loss[i] = label.ignored ? 0.0f
                              : row_loss(r, lse, label.owned ? tp.packed[r.rows + i] : global_max,
                                         tp.packed[2 * r.rows + i]);
  if (r.argmax) out.argmax[i] = tp.candidates[i];
}

// ---- dispatch -------------------------------------------------------------------------------
// `launch(grid, threads, shared_bytes, kernel, args...)` starts one kernel: a triple-chevron
// launch on a stream in ce_kernels.cu, the block emulator in the tests.

template <Dt D>
using DtConstant = std::integral_constant<Dt, D>;

template <class F>
void with_dt(Dt d, F&& f) {
  switch (d) {
    case Dt::F32: f(DtConstant<Dt::F32>{}); break;
    case Dt::BF16: f(DtConstant<Dt::BF16>{}); break;
    default: f(DtConstant<Dt::F16>{}); break;
  }
}

inline unsigned ce_elementwise_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kElementwiseThreads - 1) / kElementwiseThreads);
}

template <class Launch>
void dispatch_ce_check_labels(Launch&& launch, const CeRows& r, unsigned long long* first_bad) {
  const unsigned blocks = ce_elementwise_blocks(r.rows);
  launch(blocks < 1024u ? blocks : 1024u, kElementwiseThreads, 0, check_labels_kernel, r,
         first_bad);
}

template <class Launch>
void dispatch_ce_stats(Launch&& launch, const CeRows& r, const CeForwardOut& out) {
  const unsigned rows = static_cast<unsigned>(r.rows);
  with_dt(r.logits_dt, [&](auto l) {
    constexpr Dt L = decltype(l)::value;
    if (r.argmax)
      launch(rows, r.threads, 0, stats_kernel<L, true, false>, r, out, CeTpScratch{});
    else
      launch(rows, r.threads, 0, stats_kernel<L, false, false>, r, out, CeTpScratch{});
  });
}

template <class Launch>
void dispatch_ce_fused(Launch&& launch, const CeRows& r, const CeForwardOut& out,
                       const CeGradOut& grad) {
  const unsigned rows = static_cast<unsigned>(r.rows);
  with_dt(r.logits_dt, [&](auto l) {
    with_dt(grad.grad_dt, [&](auto g) {
      constexpr Dt L = decltype(l)::value;
      constexpr Dt G = decltype(g)::value;
      if (r.argmax)
        launch(rows, r.threads, 0, fused_kernel<L, G, true>, r, out, grad);
      else
        launch(rows, r.threads, 0, fused_kernel<L, G, false>, r, out, grad);
    });
  });
}

template <class Launch>
void dispatch_ce_partial_stats(Launch&& launch, const CeRows& r, const CeTpScratch& tp) {
  const unsigned rows = static_cast<unsigned>(r.rows);
  with_dt(r.logits_dt, [&](auto l) {
    constexpr Dt L = decltype(l)::value;
    if (r.argmax)
      launch(rows, r.threads, 0, stats_kernel<L, true, true>, r, CeForwardOut{}, tp);
    else
      launch(rows, r.threads, 0, stats_kernel<L, false, true>, r, CeForwardOut{}, tp);
  });
}

template <class Launch>
void dispatch_ce_tp_combine(Launch&& launch, const CeRows& r, const CeTpScratch& tp) {
  launch(ce_elementwise_blocks(r.rows), kElementwiseThreads, 0, tp_combine_kernel, r, tp);
}

template <class Launch>
void dispatch_ce_tp_finalize(Launch&& launch, const CeRows& r, const CeTpScratch& tp,
                             const CeForwardOut& out) {
  launch(ce_elementwise_blocks(r.rows), kElementwiseThreads, 0, tp_finalize_kernel, r, tp, out);
}

template <class Launch>
void dispatch_ce_gradient(Launch&& launch, const CeRows& r, const CeGradOut& grad) {
  const unsigned rows = static_cast<unsigned>(r.rows);
  with_dt(r.logits_dt, [&](auto l) {
    with_dt(grad.grad_dt, [&](auto g) {
      constexpr Dt L = decltype(l)::value;
      constexpr Dt G = decltype(g)::value;
      launch(rows, r.threads, 0, gradient_kernel<L, G>, r, grad);
    });
  });
}

}  // namespace
}  // namespace switchyard::liger

#endif
