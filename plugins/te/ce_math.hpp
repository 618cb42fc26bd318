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
#include <cstring>

namespace switchyard::te {

// 2^x on the FMA and integer pipes, for a share of a group's elements (ce_run_add_max): the
// streamed statistics kernel leans on the MUFU pipe (Nsight Compute on the H200: XU 62 % of
// its peak while DRAM is at 68 %), which ex2.approx shares with nothing else, so every
// kCePolyStride-th exponential goes to the FMA pipe instead. Measured (bf16 [2048, 131072]
// forward): none 0.1545 ms, every 16th 0.1535, every 8th 0.1531 / 0.1521, every 4th 0.1555,
// every 2nd 0.176 (the instructions it adds then cost more than the MUFU time it saves).
// x is rounded to n + f, f in [-1/2, 1/2], by the 1.5 * 2^23 trick; 2^f is a degree-5
// polynomial fitted to the relative error (2.9e-7 in float arithmetic, ex2.approx's is about
// 2.4e-7); 2^n is built in the exponent field. x <= -127 (the -inf padding included) gives
// exactly 0, as ex2.approx.ftz does. Every operation is one IEEE rounding, so the host
// replays it bit for bit.
constexpr int kCePolyStride = 8;

TE_HD float poly_exp2(float x) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float xc = x < -127.0f ? -127.0f : x;  // not fmaxf: a NaN must stay NaN
#if defined(__CUDA_ARCH__)
  const float t = __fadd_rn(xc, kRound);
  const float f = __fadd_rn(xc, -__fadd_rn(t, -kRound));
  const uint32_t t_bits = __float_as_uint(t);
#else
  volatile float t_store = xc + kRound;  // no contraction or reassociation on the host either
  const float t = t_store;
  const float f = xc - (t - kRound);
  uint32_t t_bits;
  std::memcpy(&t_bits, &t, 4);
#endif
  float p = 1.3241746928542852e-03f;
  p = fmaf(p, f, 9.664841927587986e-03f);
  p = fmaf(p, f, 5.550728738307953e-02f);
  p = fmaf(p, f, 2.402234673500061e-01f);
  p = fmaf(p, f, 6.931470036506653e-01f);
  p = fmaf(p, f, 1.0f);
  // t's low mantissa bits hold n (two's complement): (n + 127) << 23 is 2^n, 0 for n = -127.
  const uint32_t scale_bits = (t_bits - 0x4B400000u + 127u) << 23;
#if defined(__CUDA_ARCH__)
  return __fmul_rn(p, __uint_as_float(scale_bits));
#else
  float scale;
  std::memcpy(&scale, &scale_bits, 4);
  return p * scale;
#endif
}

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
  for (int k = 0; k < N; ++k) {
    const float x = fmaf(v[k], kLog2e, r.bias);
    e[k] = k % kCePolyStride == kCePolyStride - 1 ? poly_exp2(x) : fast_exp2(x);
  }
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
