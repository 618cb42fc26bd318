// The arithmetic of te's kernels, written once for the device and the host: the CUDA kernels
// call these functions, and tests/te runs the same functions on the CPU (emulating the
// kernels' thread layout) against a float64 reference. Nothing here touches memory.
//
// Cross entropy: an online softmax per thread (running max, sum of exp relative to it, sum of
// logits for label smoothing, lowest index of the max), merged across threads and ranks with
// ce_merge, finished into (lse, loss) by ce_finish. Norms: Chan's parallel (count, mean, M2).
#ifndef SWITCHYARD_TE_TE_MATH_HPP
#define SWITCHYARD_TE_TE_MATH_HPP

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define TE_HD __host__ __device__ __forceinline__
#else
#define TE_HD inline
#endif
// Unrolling is asked of the device compiler only (the host compiler does not know the pragma).
#if defined(__CUDA_ARCH__)
#define TE_UNROLL _Pragma("unroll")
#else
#define TE_UNROLL
#endif

namespace switchyard::te {

constexpr float kLog2e = 1.4426950408889634f;
// The argmax of a thread that has seen no element yet (or only -inf): larger than any id.
constexpr int64_t kNoArgmax = INT64_MAX;

// 2^x. On the device the MUFU approximation (2 ulp, denormal results flushed to zero: the
// terms it drops are below 2^-126 of the largest one); on the host the libm function.
TE_HD float fast_exp2(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return std::exp2(x);
#endif
}

// ---- cross entropy --------------------------------------------------------------------------

// The running statistics of a set of columns of one row.
struct CeState {
  float max;         // largest logit seen (NaN never becomes the max: fmaxf drops it)
  float sum_exp;     // sum of exp(z - max) (a NaN logit makes it NaN, and so lse)
  float sum_logits;  // sum of z (label smoothing only)
  int64_t argmax;    // lowest column holding `max`, kNoArgmax when none
};

TE_HD CeState ce_state_init() { return CeState{-INFINITY, 0.0f, 0.0f, kNoArgmax}; }

// The shift that exp() is taken relative to: the max, or 0 when it is -inf (a set of -inf
// logits has sum 0 and must not produce exp(-inf - -inf) = NaN).
TE_HD float ce_shift(float max) { return max == -INFINITY ? 0.0f : max; }

// Adds one chunk of VEC logits starting at column col0. Elements at and past `valid` are
// padding and must hold -inf (they add exp(-inf) = 0 and never become the max); they are left
// out of the sum of logits. Columns are added in increasing order within a thread, so a tie
// keeps the earlier (lower) column.
template <int VEC>
TE_HD void ce_accumulate(CeState& st, const float (&v)[VEC], int64_t col0, int valid,
                         bool smoothing) {
  float chunk_max = v[0];
TE_UNROLL
  for (int e = 1; e < VEC; ++e) chunk_max = fmaxf(chunk_max, v[e]);
  if (chunk_max > st.max) {
    // exp2(-inf) = 0 rescales an empty sum (max -inf) to 0 as well.
    st.sum_exp *= fast_exp2((st.max - chunk_max) * kLog2e);
    st.max = chunk_max;
    int first = VEC - 1;
TE_UNROLL
    for (int e = VEC - 1; e >= 0; --e)
      if (v[e] == chunk_max) first = e;
    st.argmax = col0 + first;
  }
  const float bias = -ce_shift(st.max) * kLog2e;
  float e[VEC];
TE_UNROLL
  for (int k = 0; k < VEC; ++k) e[k] = fast_exp2(fmaf(v[k], kLog2e, bias));
  // Pairwise within the chunk: a short dependency chain and a fixed order.
TE_UNROLL
  for (int width = VEC / 2; width >= 1; width /= 2)
TE_UNROLL
    for (int k = 0; k < width; ++k) e[k] += e[k + width];
  st.sum_exp += e[0];
  if (smoothing) {
    float z = 0.0f;
TE_UNROLL
    for (int k = 0; k < VEC; ++k) z += k < valid ? v[k] : 0.0f;
    st.sum_logits += z;
  }
}

// Merges the statistics of two disjoint column sets. Ties of the max keep the lower column,
// whichever side it comes from, so any merge order gives the lowest id.
TE_HD CeState ce_merge(const CeState& a, const CeState& b) {
  CeState r;
  r.max = fmaxf(a.max, b.max);
  const float shift = ce_shift(r.max);
  r.sum_exp = a.sum_exp * fast_exp2((a.max - shift) * kLog2e) +
              b.sum_exp * fast_exp2((b.max - shift) * kLog2e);
  r.sum_logits = a.sum_logits + b.sum_logits;
  r.argmax = (b.max > a.max || (b.max == a.max && b.argmax < a.argmax)) ? b.argmax : a.argmax;
  return r;
}

// Per-call constants of the loss (docs/semantics.md), computed on the host in double.
struct CeScalars {
  float smoothing;            // s: 0, alpha (PyTorch) or alpha V / (V - 1) (Megatron)
  float one_minus_smoothing;  // 1 - s
  float uniform;              // s / V: the smoothing part of q at every column
  float vocab;                // V as a float (for the mean of the logits)
};

struct CeRowResult {
  float lse;
  float loss;
};

// lse and loss of a row from its global statistics. `owned`: 0 <= label < V (and not ignored);
// then `target` is the label's logit, else the max stands in for it (Megatron's native path).
TE_HD CeRowResult ce_finish(float max, float sum_exp, float sum_logits, float target, bool owned,
                            bool ignored, const CeScalars& c) {
  CeRowResult r;
  const float log_sum = logf(sum_exp);
  r.lse = max + log_sum;
  if (ignored) {
    r.loss = 0.0f;
    return r;
  }
  const float z_t = owned ? target : max;
  const float ce = (max - z_t) + log_sum;
  if (c.smoothing == 0.0f) {
    r.loss = ce;
  } else {
    const float smooth = (max - sum_logits / c.vocab) + log_sum;
    r.loss = c.one_minus_smoothing * ce + c.smoothing * smooth;
  }
  return r;
}

// One gradient element g (p - q), p = exp(z - lse), before its single rounding.
// neg_lse_log2e = -lse * log2(e); q = uniform, plus 1 - s at the label's column.
TE_HD float ce_grad_value(float z, float neg_lse_log2e, float g, float q) {
  return g * (fast_exp2(fmaf(z, kLog2e, neg_lse_log2e)) - q);
}

// ---- normalization --------------------------------------------------------------------------

// Count, mean and sum of squared deviations of a set of values.
struct Chan {
  float n;
  float mean;
  float m2;
};

// Chan, Golub and LeVeque's pairwise update; an empty side leaves the other unchanged. Equal
// counts (every merge of a reduction tree over whole chunks) skip the division: b.n / (2 b.n)
// is exactly 0.5, so the bits are those of the general formula.
//
// chan_merge_weighted is the update with b's share b.n / (a.n + b.n) given: a reduction that
// knows every count in advance (equal-count leaves) passes the share and skips the division,
// with the bits of chan_merge.
TE_HD Chan chan_merge_weighted(const Chan& a, const Chan& b, float weight_b) {
  const float delta = b.mean - a.mean;
  Chan r;
  r.n = a.n + b.n;
  r.mean = a.mean + delta * weight_b;
  r.m2 = a.m2 + b.m2 + delta * delta * a.n * weight_b;
  return r;
}

TE_HD Chan chan_merge(const Chan& a, const Chan& b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  return chan_merge_weighted(a, b, a.n == b.n ? 0.5f : b.n / n);
}

// rstd = 1 / sqrt(variance + eps), correctly rounded sqrt and division.
TE_HD float norm_rstd(float mean_square, float eps) { return 1.0f / sqrtf(mean_square + eps); }

}  // namespace switchyard::te

#endif
