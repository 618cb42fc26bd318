// The per-thread arithmetic of te's slice kernels (ce_slice_kernels.cu), written once for the
// device and the host so that tests/te replays it on the CPU bit for bit.
//
// Why not te_math.hpp's ce_accumulate: the forward is bound by instruction issue and latency,
// not by HBM (Nsight Compute: 43 % DRAM, 64 % SM on the H200). ce_accumulate updates the max,
// a branch and the argmax per 16-byte chunk, so every chunk is its own basic block and the
// exponentials of consecutive chunks cannot overlap. Here a thread folds a *group* — the
// kCeSliceUnroll chunks it loads together, 32 bf16 — at once: one fmaxf tree, one rescale when
// the group raises the running max, then one FFMA + ex2 per element against the running max
// pre-scaled by log2(e) (all independent, so the MUFU latency is hidden inside the warp),
// one pairwise add tree. The argmax only remembers which group first reached the max; the
// element is found once, after the loop, from shared memory (kernel template flag).
#ifndef SWITCHYARD_TE_CE_MATH_HPP
#define SWITCHYARD_TE_CE_MATH_HPP

#include "te_math.hpp"

#include <cmath>
#include <cstdint>

namespace switchyard::te {

// A thread's running statistics in the slice kernels.
struct CeRun {
  float max;         // largest logit seen (fmaxf: NaN never becomes it)
  float bias;        // -ce_shift(max) * log2(e): exp(z - max) = 2^(z log2(e) + bias)
  float sum_exp;     // sum of exp(z - max)
  float sum_logits;  // sum of the row's z (label smoothing only)
  int group;         // the first group holding `max`, -1 while max is -inf
};

TE_HD CeRun ce_run_init() {
  return CeRun{-INFINITY, -ce_shift(-INFINITY) * kLog2e, 0.0f, 0.0f, -1};
}

// Pairwise reductions of v[Lo, Lo + Len) (Len a power of two): ((v0 op v1) op (v2 op v3)) op
// ...: a fixed order and a short dependency chain. Recursion, not loops, so nothing depends
// on the compiler unrolling (a rolled loop would put the array in local memory).
template <int Lo, int Len, int N>
TE_HD float ce_tree_sum(const float (&v)[N]) {
  if constexpr (Len == 1)
    return v[Lo];
  else
    return ce_tree_sum<Lo, Len / 2>(v) + ce_tree_sum<Lo + Len / 2, Len / 2>(v);
}

template <int Lo, int Len, int N>
TE_HD float ce_tree_max(const float (&v)[N]) {
  if constexpr (Len == 1)
    return v[Lo];
  else
    return fmaxf(ce_tree_max<Lo, Len / 2>(v), ce_tree_max<Lo + Len / 2, Len / 2>(v));
}

// Folds group `group` of N logits (padding past the row holds -inf: exp 0, never the max).
// With kSmoothing, `in_row[k]` says whether element k is a column of the row (only those
// enter the sum of logits; a real -inf logit does, padding does not).
//
// `group_max` is the largest of v (any order: max is exact; ce_run_add takes the tree's): the
// kernels take it from the packed 16-bit logits, two per instruction.
template <bool kSmoothing, int N>
TE_HD void ce_run_add_max(CeRun& r, const float (&v)[N], float group_max, int group,
                          const bool (&in_row)[N]) {
  if (group_max > r.max) {
    // New max: rescale the sum once. max = -inf before: 2^-inf = 0 rescales the empty sum.
    const float bias = -group_max * kLog2e;
    r.sum_exp *= fast_exp2(fmaf(r.max, kLog2e, bias));
    r.max = group_max;
    r.bias = bias;
    r.group = group;
  }
  float e[N];
TE_UNROLL
  for (int k = 0; k < N; ++k) e[k] = fast_exp2(fmaf(v[k], kLog2e, r.bias));
  r.sum_exp += ce_tree_sum<0, N>(e);
  if (kSmoothing) {
    float z[N];
TE_UNROLL
    for (int k = 0; k < N; ++k) z[k] = in_row[k] ? v[k] : 0.0f;
    r.sum_logits += ce_tree_sum<0, N>(z);
  }
}

// One gradient element g (p - q), p = exp(z - lse), before its single rounding: te_math.hpp's
// ce_grad_value with q known to be 0 at compile time when there is no smoothing (every column
// but the label's, whose q_target = 1 the kernels store separately). Then g (p - 0) = g p
// exactly (p is never -0), so the subtraction is left out: one FFMA, one ex2, one FMUL.
template <bool kSmoothing>
TE_HD float ce_grad_other(float z, float neg_lse_log2e, float g, float q_other) {
  const float p = fast_exp2(fmaf(z, kLog2e, neg_lse_log2e));
  if constexpr (kSmoothing)
    return g * (p - q_other);
  else
    return g * p;
}

template <bool kSmoothing, int N>
TE_HD void ce_run_add(CeRun& r, const float (&v)[N], int group, const bool (&in_row)[N]) {
  ce_run_add_max<kSmoothing>(r, v, ce_tree_max<0, N>(v), group, in_row);
}

// The first of N logits equal to `max` (N when none): the argmax inside the recorded group.
template <int N>
TE_HD int ce_first_equal(const float (&v)[N], float max) {
  int first = N;
TE_UNROLL
  for (int k = N - 1; k >= 0; --k)
    if (v[k] == max) first = k;
  return first;
}

}  // namespace switchyard::te

#endif
