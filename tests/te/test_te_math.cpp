// White-box tests of te's arithmetic on the CPU. The kernels' per-element and per-merge math
// lives in plugins/te/te_math.hpp and is compiled here for the host; these tests replay it with
// the kernels' thread layout (chunk k -> thread k mod T, kCeUnroll chunks per step, the warp's
// shfl_down tree then warps in order, ranks in order) and compare with float64 references.
// What they cannot check: the CUDA code around this math (loads, stores, barriers, launches).
#include "ce_math.hpp"
#include "ce_plan.hpp"
#include "norm_plan.hpp"
#include "row_claims.hpp"
#include "te_math.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace switchyard::te;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- the cross-entropy kernels' reduction, replayed ------------------------------------------

// The fixed tree of block_merge: per warp lanes l and l + offset for offset 16..1 (shfl_down;
// lanes past the warp see their own value), lane 0 of each warp, then warps in order.
CeState block_merge(const std::vector<CeState>& threads) {
  const size_t warps = threads.size() / 32;
  std::vector<CeState> lane0(warps);
  for (size_t w = 0; w < warps; ++w) {
    std::vector<CeState> lanes(threads.begin() + w * 32, threads.begin() + (w + 1) * 32);
    for (int offset = 16; offset > 0; offset >>= 1) {
      std::vector<CeState> next(32);
      for (int l = 0; l < 32; ++l) next[l] = ce_merge(lanes[l], l + offset < 32 ? lanes[l + offset] : lanes[l]);
      lanes = next;
    }
    lane0[w] = lanes[0];
  }
  CeState s = lane0[0];
  for (size_t w = 1; w < warps; ++w) s = ce_merge(s, lane0[w]);
  return s;
}

// The statistics ce_stats_kernel computes for one row of `z` (vocab_local columns).
template <int VEC>
CeState kernel_row_stats(const std::vector<float>& z, int threads, bool smoothing) {
  const int64_t columns = static_cast<int64_t>(z.size());
  const int64_t chunks = (columns + VEC - 1) / VEC;
  std::vector<CeState> state(static_cast<size_t>(threads), ce_state_init());
  for (int tid = 0; tid < threads; ++tid)
    for (int64_t base = 0; base < chunks; base += int64_t{threads} * kCeUnroll)
      for (int u = 0; u < kCeUnroll; ++u) {
        const int64_t k = base + int64_t{u} * threads + tid;
        if (k >= chunks) continue;
        float v[VEC];
        for (int e = 0; e < VEC; ++e) v[e] = k * VEC + e < columns ? z[k * VEC + e] : -kInf;
        const int valid = static_cast<int>(std::min<int64_t>(VEC, columns - k * VEC));
        ce_accumulate(state[tid], v, k * VEC, valid, smoothing);
      }
  return block_merge(state);
}

// The statistics the slice kernels (Stats and Fused alike) compute for one row: slice s holds
// chunks [s S, (s + 1) S); in a slice, thread t folds its groups g = 0, 1, ... (chunks
// g 4T + u T + t, u = 0..3, elements past the row -inf) with ce_run_add, and its argmax is the
// first element equal to its max in the first group that reached it; block_merge over the
// slice's threads; then the slices merged in rank order.
template <int VEC, bool kSmoothing>
CeState slice_row_stats(const std::vector<float>& z, const CePlan& plan) {
  constexpr int N = kCeSliceUnroll * VEC;
  const int64_t columns = static_cast<int64_t>(z.size());
  const int T = plan.slice_threads;
  const int64_t group_chunks = int64_t{T} * kCeSliceUnroll;
  CeState row = ce_state_init();
  for (int s = 0; s < plan.cluster; ++s) {
    const int64_t first = int64_t{s} * plan.slice_chunks;
    const int64_t n = std::max<int64_t>(0, std::min<int64_t>(plan.slice_chunks, plan.chunks - first));
    std::vector<CeState> state(static_cast<size_t>(T), ce_state_init());
    for (int tid = 0; tid < T; ++tid) {
      // Column of element k of group g of this thread.
      auto column = [&](int64_t g, int k) {
        return (first + g * group_chunks + int64_t{k / VEC} * T + tid) * VEC + k % VEC;
      };
      auto group_values = [&](int64_t g, float (&v)[N], bool (&in_row)[N]) {
        for (int k = 0; k < N; ++k) {
          const int64_t col = column(g, k);
          // In the slice (chunk < n) and in the row: the slice kernels stage the rest as -inf.
          in_row[k] = (col / VEC - first) < n && col < columns;
          v[k] = in_row[k] ? z[static_cast<size_t>(col)] : -kInf;
        }
      };
      CeRun run = ce_run_init();
      for (int64_t g = 0; g * group_chunks < n; ++g) {
        float v[N];
        bool in_row[N];
        group_values(g, v, in_row);
        ce_run_add<kSmoothing>(run, v, static_cast<int>(g), in_row);
      }
      CeState st{run.max, run.sum_exp, run.sum_logits, kNoArgmax};
      if (run.group >= 0) {
        float v[N];
        bool in_row[N];
        group_values(run.group, v, in_row);
        st.argmax = column(run.group, ce_first_equal(v, run.max));
      }
      state[static_cast<size_t>(tid)] = st;
    }
    const CeState block = block_merge(state);
    row = s == 0 ? block : ce_merge(row, block);
  }
  return row;
}

// The statistics of a row as the forward computes them: the slice kernels when the row fits
// them, else ce_stats_kernel (and ce_fused_kernel, with the same block).
CeState row_stats(const std::vector<float>& z, DLDataType dtype, bool smoothing) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = 1;
  p.vocab_local = p.vocab_size = static_cast<int64_t>(z.size());
  p.logits_dtype = p.grad_dtype = dtype;
  p.tp_size = 1;
  const CePlan plan = ce_plan(p);
  if (plan.slices)
    return plan.vec == 8 ? (smoothing ? slice_row_stats<8, true>(z, plan) : slice_row_stats<8, false>(z, plan))
                         : (smoothing ? slice_row_stats<4, true>(z, plan) : slice_row_stats<4, false>(z, plan));
  if (plan.vec == 8) return kernel_row_stats<8>(z, plan.stats_threads, smoothing);
  return kernel_row_stats<4>(z, plan.stats_threads, smoothing);
}

// float64 reference of docs/semantics.md for one row (tp_size 1).
struct Reference {
  double lse, loss;
  int64_t argmax;
};

Reference reference(const std::vector<float>& z, int64_t label, double s, bool ignored) {
  double m = -INFINITY;
  int64_t arg = 0;
  for (size_t j = 0; j < z.size(); ++j)
    if (z[j] > m) {
      m = z[j];
      arg = static_cast<int64_t>(j);
    }
  double sum = 0, sum_z = 0;
  for (float v : z) {
    sum += std::exp(double(v) - m);
    sum_z += v;
  }
  Reference r;
  r.lse = m + std::log(sum);
  r.argmax = arg;
  const int64_t v = static_cast<int64_t>(z.size());
  const double zt = label >= 0 && label < v ? z[label] : m;
  r.loss = ignored ? 0.0 : (1 - s) * (r.lse - zt) + s * (r.lse - sum_z / double(v));
  return r;
}

CeScalars scalars(double s, int64_t v) {
  CeScalars c{};
  c.smoothing = float(s);
  c.one_minus_smoothing = float(1 - s);
  c.uniform = float(s / double(v));
  c.vocab = float(v);
  return c;
}

std::vector<float> random_row(std::mt19937& rng, int64_t n, float low = -6, float high = 6) {
  std::uniform_real_distribution<float> d(low, high);
  std::vector<float> z(static_cast<size_t>(n));
  for (auto& v : z) v = d(rng);
  return z;
}

CeRowResult finish(const CeState& st, float target, bool owned, bool ignored, const CeScalars& c) {
  return ce_finish(st.max, st.sum_exp, st.sum_logits, target, owned, ignored, c);
}

}  // namespace

TEST_CASE("ce: the kernel's online softmax matches float64 for every dtype and row length") {
  std::mt19937 rng(7);
  for (DLDataType dtype : {DLDataType{kDLBfloat, 16, 1}, DLDataType{kDLFloat, 32, 1}}) {
    for (int64_t v : {int64_t{1}, int64_t{3}, int64_t{50}, int64_t{127}, int64_t{4099},
                      int64_t{50257}, int64_t{131072}}) {
      const std::vector<float> z = random_row(rng, v);
      const int64_t label = v / 3;
      const Reference ref = reference(z, label, 0.0, false);
      const CeState st = row_stats(z, dtype, false);
      const CeRowResult r = finish(st, z[label], true, false, scalars(0.0, v));
      INFO("V = " << v << " bits " << int(dtype.bits));
      CHECK(std::fabs(r.lse - ref.lse) <= 2e-6 * std::fabs(ref.lse) + 1e-6);
      CHECK(std::fabs(r.loss - ref.loss) <= 2e-6 * std::max(std::fabs(ref.loss), std::fabs(ref.lse)) + 1e-6);
      CHECK(st.argmax == ref.argmax);
    }
  }
}

TEST_CASE("ce: label smoothing in both conventions over the global vocabulary") {
  std::mt19937 rng(11);
  const int64_t v = 1000;
  const std::vector<float> z = random_row(rng, v);
  const double alpha = 0.1;
  for (double s : {alpha, alpha * v / (v - 1.0)}) {  // PyTorch, Megatron
    const Reference ref = reference(z, 17, s, false);
    const CeState st = row_stats(z, DLDataType{kDLBfloat, 16, 1}, true);
    const CeRowResult r = finish(st, z[17], true, false, scalars(s, v));
    CHECK(std::fabs(r.loss - ref.loss) <= 1e-5 * std::fabs(ref.lse));
  }
  // The plan computes s for each convention from alpha (and 0 for a one-word vocabulary).
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.vocab_size = p.vocab_local = v;
  p.tp_size = 1;
  p.logits_dtype = p.grad_dtype = DLDataType{kDLBfloat, 16, 1};
  p.label_smoothing = float(alpha);
  p.smoothing = SY_SMOOTHING_PYTORCH;
  CHECK(ce_plan(p).scalars.smoothing == doctest::Approx(alpha).epsilon(1e-7));
  p.smoothing = SY_SMOOTHING_MEGATRON;
  CHECK(ce_plan(p).scalars.smoothing == doctest::Approx(alpha * v / (v - 1.0)).epsilon(1e-7));
  CHECK(ce_plan(p).scalars.uniform == doctest::Approx(alpha / (v - 1.0)).epsilon(1e-6));
  p.vocab_size = p.vocab_local = 1;
  CHECK(ce_plan(p).scalars.smoothing == 0.0f);
}

TEST_CASE("ce: ignored rows have loss 0 and an lse; unowned labels use the max (no one-hot)") {
  std::mt19937 rng(3);
  const std::vector<float> z = random_row(rng, 300);
  const CeState st = row_stats(z, DLDataType{kDLBfloat, 16, 1}, false);
  const CeRowResult ignored = finish(st, 0.0f, false, true, scalars(0, 300));
  CHECK(ignored.loss == 0.0f);
  CHECK(std::fabs(ignored.lse - reference(z, 0, 0, false).lse) < 1e-5);
  const CeRowResult unowned = finish(st, 0.0f, false, false, scalars(0, 300));
  const Reference ref = reference(z, 300, 0, false);  // label == V: nobody owns it
  CHECK(std::fabs(unowned.loss - ref.loss) < 1e-5);
  CHECK(unowned.loss == doctest::Approx(unowned.lse - st.max).epsilon(1e-6));
}

// The slice kernels remember only the group (4 chunks a thread loads together) that first
// reached the max and find the element afterwards: ties inside one thread's group, across its
// groups and a later, larger max must still give the lowest column.
TEST_CASE("ce: slice argmax per group (bf16 V = 131072: T = 256, groups of chunks t + 256 u)") {
  std::mt19937 rng(11);
  std::vector<float> z = random_row(rng, 131072, -6, 6);
  const auto col = [](int64_t group, int64_t u, int64_t t, int64_t k) {
    return ((group * 4 + u) * 256 + t) * 8 + k;
  };
  // Thread 3 of slice 0: the max in group 0 at chunks u = 2 and u = 0, and in group 1.
  for (int64_t j : {col(0, 2, 3, 1), col(0, 0, 3, 6), col(1, 0, 3, 0)}) z[static_cast<size_t>(j)] = 9.0f;
  CHECK(row_stats(z, DLDataType{kDLBfloat, 16, 1}, false).argmax == col(0, 0, 3, 6));
  // A larger max in a later group of another thread, then the same value earlier in its chunk.
  z[static_cast<size_t>(col(2, 3, 200, 5))] = 10.0f;
  CHECK(row_stats(z, DLDataType{kDLBfloat, 16, 1}, false).argmax == col(2, 3, 200, 5));
  z[static_cast<size_t>(col(2, 3, 200, 4))] = 10.0f;
  z[static_cast<size_t>(col(3, 1, 200, 7))] = 10.0f;
  CHECK(row_stats(z, DLDataType{kDLBfloat, 16, 1}, false).argmax == col(2, 3, 200, 4));
  // In the last slice, and a NaN next to it: NaN never becomes the max.
  z[131071] = 11.0f;
  z[131070] = std::numeric_limits<float>::quiet_NaN();
  const CeState st = row_stats(z, DLDataType{kDLBfloat, 16, 1}, false);
  CHECK(st.argmax == 131071);
  CHECK(std::isnan(st.sum_exp));
}

TEST_CASE("ce: argmax is the lowest id of the max, across threads, chunks and ranks") {
  std::mt19937 rng(5);
  std::vector<float> z = random_row(rng, 5000, -6, 6);
  // The max three times: in different chunks and different threads' columns.
  for (int64_t j : {int64_t{4097}, int64_t{1203}, int64_t{4999}}) z[j] = 9.0f;
  CHECK(row_stats(z, DLDataType{kDLBfloat, 16, 1}, false).argmax == 1203);
  CHECK(row_stats(z, DLDataType{kDLFloat, 32, 1}, false).argmax == 1203);
  // Twice in one chunk: the first element wins.
  z[1202] = 9.0f;
  CHECK(row_stats(z, DLDataType{kDLBfloat, 16, 1}, false).argmax == 1202);

  // Across ranks: the row split unequally; every rank's local argmax is a global id, and the
  // merge in rank order keeps the lowest id among equal maxima.
  const std::vector<int64_t> split{1200, 1, 3000, 799};
  CeState merged{};
  int64_t start = 0;
  for (size_t r = 0; r < split.size(); ++r) {
    const std::vector<float> part(z.begin() + start, z.begin() + start + split[r]);
    CeState st = row_stats(part, DLDataType{kDLBfloat, 16, 1}, false);
    st.argmax = (st.argmax == kNoArgmax ? 0 : st.argmax) + start;
    merged = r == 0 ? st : ce_merge(merged, st);
    start += split[r];
  }
  CHECK(merged.argmax == 1202);
}

TEST_CASE("ce: -inf logits (masked vocabulary padding) and NaN") {
  std::mt19937 rng(9);
  std::vector<float> z = random_row(rng, 2000);
  // A whole leading chunk range and the tail of the row at -inf: threads whose first chunks
  // are all -inf must not produce exp(-inf - -inf).
  for (int j = 0; j < 600; ++j) z[j] = -kInf;
  for (int j = 1900; j < 2000; ++j) z[j] = -kInf;
  const Reference ref = reference(z, 700, 0, false);
  const CeState st = row_stats(z, DLDataType{kDLBfloat, 16, 1}, false);
  const CeRowResult r = finish(st, z[700], true, false, scalars(0, 2000));
  CHECK(std::isfinite(r.lse));
  CHECK(std::fabs(r.lse - ref.lse) < 1e-5);
  CHECK(st.argmax == ref.argmax);

  std::vector<float> all_masked(64, -kInf);
  const CeState none = row_stats(all_masked, DLDataType{kDLBfloat, 16, 1}, false);
  CHECK(none.max == -kInf);
  CHECK(none.sum_exp == 0.0f);
  CHECK(finish(none, 0, false, false, scalars(0, 64)).lse == -kInf);

  z[1234] = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(finish(row_stats(z, DLDataType{kDLBfloat, 16, 1}, false), z[700], true,
                          false, scalars(0, 2000)).lse));
}

TEST_CASE("ce: tensor parallelism over unequal partitions equals tp_size 1") {
  std::mt19937 rng(13);
  const int64_t v = 50257;
  const std::vector<float> z = random_row(rng, v);
  const double s = 0.1 * v / (v - 1.0);
  for (int64_t label : {int64_t{0}, int64_t{20000}, v - 1, v, int64_t{-100}}) {
    const std::vector<int64_t> split{7000, 30001, 13256};  // unsorted, unequal
    CeState merged{};
    float target = 0.0f;
    int64_t start = 0;
    for (size_t r = 0; r < split.size(); ++r) {
      const std::vector<float> part(z.begin() + start, z.begin() + start + split[r]);
      CeState st = row_stats(part, DLDataType{kDLBfloat, 16, 1}, true);
      st.argmax = (st.argmax == kNoArgmax ? 0 : st.argmax) + start;
      const int64_t col = label - start;
      const float t = col >= 0 && col < split[r] ? part[col] : 0.0f;  // the stats kernel's rule
      merged = r == 0 ? st : ce_merge(merged, st);
      target = r == 0 ? t : target + t;
      start += split[r];
    }
    const bool owned = label >= 0 && label < v;
    const CeRowResult r = finish(merged, target, owned, false, scalars(s, v));
    const Reference ref = reference(z, label, s, false);
    INFO("label " << label);
    CHECK(std::fabs(r.lse - ref.lse) <= 2e-6 * std::fabs(ref.lse));
    CHECK(std::fabs(r.loss - ref.loss) <= 1e-5 * std::fabs(ref.lse));
    CHECK(merged.argmax == ref.argmax);
  }
}

TEST_CASE("ce: poly_exp2 (the FMA-pipe exponential) within 3e-7 of exp2, exact where it must be") {
  // Over the range the statistics feed it (x = (z - max) log2 e <= 0, rounding may give a
  // little above 0), dense near 0 where the large terms are.
  double worst = 0.0;
  for (int i = 0; i <= 200000; ++i) {
    const float x = -126.0f * static_cast<float>(i) / 200000.0f;
    for (const float y : {x, x * 1e-3f, x * 1e-6f, -x * 1e-6f}) {
      const double exact = std::exp2(static_cast<double>(y));
      worst = std::max(worst, std::abs(static_cast<double>(poly_exp2(y)) - exact) / exact);
    }
  }
  CHECK(worst < 3e-7);
  for (int n = -126; n <= 0; ++n) CHECK(poly_exp2(static_cast<float>(n)) == std::ldexp(1.0f, n));
  // The padding and underflow give 0, as ex2.approx.ftz does; NaN stays NaN (a NaN logit
  // must make the row's lse NaN whichever pipe computed its exponential).
  CHECK(poly_exp2(-kInf) == 0.0f);
  CHECK(poly_exp2(-127.0f) == 0.0f);
  CHECK(poly_exp2(-1000.0f) == 0.0f);
  CHECK(std::isnan(poly_exp2(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("ce: one gradient element g (p - q) within fp32 rounding of float64") {
  std::mt19937 rng(17);
  const int64_t v = 4096;
  const std::vector<float> z = random_row(rng, v);
  const double lse = reference(z, 0, 0, false).lse;
  const double s = 0.1, g = 1.0 / 2048;
  const float neg = -float(lse) * kLog2e;
  double worst = 0;
  for (int64_t j = 0; j < v; ++j) {
    const double q = s / v + (j == 5 ? 1 - s : 0);
    const double expected = g * (std::exp(double(z[j]) - lse) - q);
    const double got = ce_grad_value(z[j], neg, float(g), float(q));
    const double terms = g * (std::exp(double(z[j]) - lse) + q);
    worst = std::max(worst, std::fabs(got - expected) / terms);
  }
  CHECK(worst < 1e-5);  // the conformance bound for fp32 gradients (of the terms)
}

// The slice kernels' whole-chunk path forms every element with q = q_other through
// ce_grad_other (no subtraction without smoothing) and stores the label's element again with
// ce_grad_value(q_target): both must give ce_grad_value's bits, so a row's gradient does not
// depend on which path (whole pieces, the guarded rest, ce_grad_kernel) wrote it.
TEST_CASE("ce: the slice kernels' gradient element has ce_grad_value's bits") {
  std::mt19937 rng(29);
  std::vector<float> z = random_row(rng, 4096);
  z.push_back(-INFINITY);
  z.push_back(INFINITY);
  z.push_back(NAN);
  z.push_back(0.0f);
  const float neg = -11.5f * kLog2e, g = 1.0f / 2048;
  const float q = 0.1f / 4096;
  const auto same = [](float a, float b) {
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
  };
  int differ = 0;
  for (const float x : z) {
    differ += !same(ce_grad_other<false>(x, neg, g, 0.0f), ce_grad_value(x, neg, g, 0.0f));
    differ += !same(ce_grad_other<true>(x, neg, g, q), ce_grad_value(x, neg, g, q));
  }
  CHECK(differ == 0);
}

// ---- norms ------------------------------------------------------------------------------------

namespace {

// The group reduction of the norm kernels: shfl_down tree per warp, lane 0 broadcast, then
// warps merged in order by every thread.
template <class Merge, class T>
T group_reduce(const std::vector<T>& threads, Merge merge) {
  const size_t warps = threads.size() / 32;
  std::vector<T> lane0(warps);
  for (size_t w = 0; w < warps; ++w) {
    std::vector<T> lanes(threads.begin() + w * 32, threads.begin() + (w + 1) * 32);
    for (int offset = 16; offset > 0; offset >>= 1) {
      std::vector<T> next(32);
      for (int l = 0; l < 32; ++l) next[l] = merge(lanes[l], l + offset < 32 ? lanes[l + offset] : lanes[l]);
      lanes = next;
    }
    lane0[w] = lanes[0];
  }
  T r = lane0[0];
  for (size_t w = 1; w < warps; ++w) r = merge(r, lane0[w]);
  return r;
}

// LayerNorm statistics as norm_forward_kernel computes them for one row.
Chan kernel_layer_stats(const std::vector<float>& h, const NormLayout& l) {
  const int64_t hidden = static_cast<int64_t>(h.size());
  std::vector<Chan> threads(static_cast<size_t>(l.threads));
  for (int t = 0; t < l.threads; ++t) {
    float count = 0, sum = 0;
    std::vector<float> mine;
    for (int c = 0; c < l.chunks_per_thread; ++c)
      for (int e = 0; e < l.vec; ++e) {
        const int64_t col = (int64_t{t} + int64_t{c} * l.threads) * l.vec + e;
        if (col < hidden) {
          mine.push_back(h[col]);
          sum += h[col];
          count += 1;
        }
      }
    const float mean = count > 0 ? sum / count : 0.0f;
    float m2 = 0;
    for (float x : mine) m2 += (x - mean) * (x - mean);
    threads[t] = Chan{count, mean, m2};
  }
  return group_reduce(threads, [](const Chan& a, const Chan& b) { return chan_merge(a, b); });
}

sy_norm_problem norm(int64_t rows, int64_t hidden, DLDataType dtype, sy_norm_kind kind = SY_NORM_LAYER) {
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = kind;
  p.rows = rows;
  p.hidden = hidden;
  p.eps = 1e-5f;
  p.x_dtype = p.y_dtype = p.weight_dtype = p.grad_weight_dtype = dtype;
  return p;
}

}  // namespace

TEST_CASE("norm: Chan's merge over the kernel's layout gives the float64 mean and variance") {
  std::mt19937 rng(21);
  for (DLDataType dtype : {DLDataType{kDLBfloat, 16, 1}, DLDataType{kDLFloat, 32, 1}}) {
    for (int64_t hidden : {int64_t{1}, int64_t{2}, int64_t{127}, int64_t{1024}, int64_t{1025},
                           int64_t{4096}, int64_t{5000}, int64_t{8192}, int64_t{16384}}) {
      const NormPlan plan = norm_plan(norm(64, hidden, dtype));
      // A large mean with a small spread: one-pass E[x^2] - E[x]^2 would cancel badly.
      std::vector<float> h = random_row(rng, hidden, 100.0f, 101.0f);
      double mean = 0, var = 0;
      for (float x : h) mean += x;
      mean /= double(hidden);
      for (float x : h) var += (x - mean) * (x - mean);
      var /= double(hidden);
      const Chan c = kernel_layer_stats(h, plan.forward);
      INFO("hidden " << hidden << " bits " << int(dtype.bits));
      CHECK(c.n == float(hidden));
      CHECK(std::fabs(c.mean - mean) <= 1e-6 * 101.0);
      CHECK(std::fabs(c.m2 / float(hidden) - var) <= 2e-4 * var + 1e-9);
      const float rstd = norm_rstd(c.m2 / float(hidden), 1e-5f);
      CHECK(std::fabs(rstd - 1.0 / std::sqrt(var + 1e-5)) <= 1e-4 / std::sqrt(var + 1e-5));
    }
  }
}

TEST_CASE("norm: known shares give chan_merge's bits (the equal-count block merge)") {
  // norm_forward.cu's equal_count_chan_reduce merges equal counts with share 0.5 in the lane
  // tree and warp w into the w warps before it with share RN(1/(w + 1)); both must be the
  // bits of chan_merge, which divides.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mean(-3.0f, 3.0f), m2(0.0f, 50.0f);
  const auto same = [](const Chan& x, const Chan& y) {
    return std::memcmp(&x.n, &y.n, 4) == 0 && std::memcmp(&x.mean, &y.mean, 4) == 0 &&
           std::memcmp(&x.m2, &y.m2, 4) == 0;
  };
  for (float per : {8.0f, 32.0f, 64.0f, 1024.0f, 2048.0f, 96.0f}) {
    for (int trial = 0; trial < 200; ++trial) {
      const Chan a{per, mean(rng), m2(rng)}, b{per, mean(rng), m2(rng)};
      CHECK(same(chan_merge(a, b), chan_merge_weighted(a, b, 0.5f)));
      Chan general = a, known = a;
      for (int w = 1; w < 16; ++w) {
        const Chan next{per, mean(rng), m2(rng)};
        general = chan_merge(general, next);
        known = chan_merge_weighted(known, next, 1.0f / static_cast<float>(w + 1));
        INFO("count " << per << " warp " << w);
        REQUIRE(same(general, known));
      }
    }
  }
}

TEST_CASE("norm: chan_merge with an empty side is the other side") {
  const Chan a{4, 2.5f, 3.0f}, empty{0, 0, 0};
  const Chan l = chan_merge(empty, a), r = chan_merge(a, empty);
  CHECK(l.n == 4);
  CHECK(l.mean == 2.5f);
  CHECK(l.m2 == 3.0f);
  CHECK(r.n == 4);
  CHECK(r.mean == 2.5f);
  CHECK(r.m2 == 3.0f);
  CHECK(chan_merge(empty, empty).n == 0);
}

// ---- launch plans ----------------------------------------------------------------------------

TEST_CASE("norm plan: every hidden size fits the registers of one block of <= 512 threads") {
  for (DLDataType dtype : {DLDataType{kDLBfloat, 16, 1}, DLDataType{kDLFloat, 16, 1},
                           DLDataType{kDLFloat, 32, 1}}) {
    for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS}) {
      for (int64_t hidden = 1; hidden <= kNormMaxHidden; hidden += hidden < 300 ? 1 : 97) {
        for (int64_t h : {hidden, int64_t{kNormMaxHidden}}) {
          const NormPlan plan = norm_plan(norm(1000, h, dtype, kind));
          for (const NormLayout& l : {plan.forward, plan.backward}) {
            INFO("hidden " << h << " bits " << int(dtype.bits) << " threads " << l.threads);
            REQUIRE(l.vec == 16 / (dtype.bits / 8));
            REQUIRE(l.threads % 32 == 0);
            REQUIRE(l.threads >= 32);
            REQUIRE(l.threads <= kNormMaxBlock);
            REQUIRE(int64_t{l.threads} * l.chunks_per_thread * l.vec >= h);
          }
          // The kernels are instantiated for these register layouts only.
          const int f = plan.forward.chunks_per_thread, b = plan.backward.chunks_per_thread;
          REQUIRE((f == 1 || f == 2 || f == 4 || f == 8));
          REQUIRE((b == 1 || b == 2 || b == 4 || (b == 8 && plan.backward.vec == 4)));
        }
      }
    }
  }
  // The performance shapes (bf16): 32 elements per thread, forward and backward, except the
  // backward of rows wider than 128 threads x 32 (bf16 8192: 512 x 16), the fp32 LayerNorm
  // backward, whose dbeta sums would not fit the registers, and the 16-bit RMS/L2 forward of
  // rows it does not read directly (16: 8192 at 512 x 16).
  const DLDataType bf16{kDLBfloat, 16, 1};
  const NormPlan rms4096 = norm_plan(norm(16384, 4096, bf16, SY_NORM_RMS));
  const NormPlan ln8192 = norm_plan(norm(16384, 8192, bf16, SY_NORM_LAYER));
  CHECK(rms4096.forward.threads == 128);
  CHECK(rms4096.forward.chunks_per_thread == 4);
  CHECK(norm_plan(norm(16384, 4096, bf16, SY_NORM_L2)).forward.threads == 128);
  CHECK(norm_plan(norm(16384, 8192, bf16, SY_NORM_RMS)).forward.threads == 512);
  CHECK(norm_plan(norm(16384, 4096, bf16, SY_NORM_LAYER)).forward.threads == 128);
  CHECK(norm_plan(norm(16384, 4096, DLDataType{kDLFloat, 32, 1}, SY_NORM_RMS)).forward.chunks_per_thread == 8);
  CHECK(rms4096.backward.threads == 128);
  CHECK(ln8192.forward.threads == 256);
  CHECK(ln8192.forward.chunks_per_thread == 4);
  CHECK(ln8192.backward.threads == 512);
  CHECK(ln8192.backward.chunks_per_thread == 2);
  const NormPlan rms16384 = norm_plan(norm(16384, 16384, bf16, SY_NORM_RMS));
  CHECK(rms16384.backward.threads == 512);
  CHECK(rms16384.backward.chunks_per_thread == 4);
  // Rows that cannot stream at 16 bits (fp32, mixed dtypes, memory-efficient) take 16 elements
  // a thread in the backward, RMS/L2 as LayerNorm (fourteenth session: fp32 RMS 4096 backward
  // at 256 x 16 against 128 x 32, forward + backward 0.485 -> 0.383 ms).
  const DLDataType f32{kDLFloat, 32, 1};
  for (sy_norm_kind kind : {SY_NORM_RMS, SY_NORM_LAYER, SY_NORM_L2}) {
    const NormPlan fp32 = norm_plan(norm(16384, 4096, f32, kind));
    CHECK(fp32.backward.threads == 256);
    CHECK(fp32.backward.chunks_per_thread * fp32.backward.vec == 16);
    sy_norm_problem p = norm(16384, 4096, bf16, kind);
    p.y_dtype = f32;  // mixed dtypes: the general kernel
    CHECK(norm_plan(p).backward.chunks_per_thread * norm_plan(p).backward.vec == 16);
  }
  sy_norm_problem efficient = norm(16384, 4096, bf16, SY_NORM_RMS);
  efficient.flags = SY_NORM_MEMORY_EFFICIENT;
  CHECK(norm_plan(efficient).backward.threads == 256);
}

TEST_CASE("norm plan: 16-bit RMS/L2 rows of 2048 to 4096 elements are read directly at 32 a thread") {
  // norm_forward_reads_directly: measured faster from 2048 to 4096 elements, level at 5120,
  // slower at 8192 and 16384 (norm_forward.cu, kForwardDirect).
  CHECK_FALSE(norm_forward_reads_directly(false, 8, 255));
  CHECK(norm_forward_reads_directly(false, 8, 256));
  CHECK(norm_forward_reads_directly(false, 8, 512));
  CHECK_FALSE(norm_forward_reads_directly(false, 8, 513));
  CHECK_FALSE(norm_forward_reads_directly(true, 8, 512));  // LayerNorm: slower read so
  CHECK_FALSE(norm_forward_reads_directly(false, 4, 512));  // fp32: not measured
  // The kernel reads them one row a block at 4 chunks a thread (kForwardDirect): the plan must
  // give every such row that layout, whatever its kind of 16-bit dtype.
  for (const DLDataType dtype : {DLDataType{kDLBfloat, 16, 1}, DLDataType{kDLFloat, 16, 1}})
    for (sy_norm_kind kind : {SY_NORM_RMS, SY_NORM_L2})
      for (int64_t hidden = 2040; hidden <= 4104; hidden += 8) {
        const NormPlan plan = norm_plan(norm(16384, hidden, dtype, kind));
        INFO("hidden " << hidden << " kind " << int(kind));
        CHECK((plan.forward.chunks_per_thread == 4) == norm_forward_reads_directly(false, 8, plan.chunks));
        if (hidden > 4096) CHECK(plan.forward.chunks_per_thread == 2);
      }
  const DLDataType bf16{kDLBfloat, 16, 1};
  CHECK(norm_plan(norm(16384, 2048, bf16, SY_NORM_RMS)).forward.threads == 64);
  CHECK(norm_plan(norm(16384, 3072, bf16, SY_NORM_RMS)).forward.threads == 96);
  CHECK(norm_plan(norm(16384, 2040, bf16, SY_NORM_RMS)).forward.chunks_per_thread == 2);
}

TEST_CASE("norm plan: the dgamma partition depends on rows and hidden only") {
  for (int64_t rows : {int64_t{1}, int64_t{5}, int64_t{9}, int64_t{1000}, int64_t{16384},
                       int64_t{1} << 20}) {
    for (int64_t hidden : {int64_t{127}, int64_t{4096}, int64_t{8192}}) {
      for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2}) {
        sy_norm_problem p = norm(rows, hidden, DLDataType{kDLBfloat, 16, 1}, kind);
        const NormPlan a = norm_plan(p);
        p.sm_margin = 33;
        p.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT | SY_NORM_RESIDUAL;
        const NormPlan b = norm_plan(p);
        CHECK(a.rows_per_chunk == b.rows_per_chunk);
        CHECK(a.chunk_count == b.chunk_count);
        CHECK(a.chunk_count * a.rows_per_chunk >= rows);
        CHECK((a.chunk_count - 1) * a.rows_per_chunk < rows);
        CHECK(a.chunk_count <= kNormMaxRowChunks);
        // The partials, then the forward's row counter where it claims rows (RMS/L2).
        CHECK(a.row_claims_offset == a.parameters * a.partial_bytes);
        CHECK(a.row_claims_bytes == (kind == SY_NORM_LAYER ? 0 : kRowClaimsBytes));
        CHECK(a.workspace_bytes == a.row_claims_offset + a.row_claims_bytes);
        CHECK(a.partial_bytes >= a.chunk_count * hidden * 4);
      }
    }
  }
  // The forward counts its claims in 32 bits, one a block past the last row as well: past
  // kNormMaxClaimedRows the count could wrap, so no counter and rows by stride.
  CHECK(norm_plan(norm(kNormMaxClaimedRows, 8, DLDataType{kDLBfloat, 16, 1}, SY_NORM_RMS))
            .row_claims_bytes == kRowClaimsBytes);
  CHECK(norm_plan(norm(kNormMaxClaimedRows + 1, 8, DLDataType{kDLBfloat, 16, 1}, SY_NORM_RMS))
            .row_claims_bytes == 0);
  // The performance shapes: 512 chunks of 32 rows at 4096 (128-thread backward blocks), 128
  // of 128 at 8192 and 16384 (512 threads).
  CHECK(norm_plan(norm(16384, 4096, DLDataType{kDLBfloat, 16, 1})).chunk_count == 512);
  CHECK(norm_plan(norm(16384, 8192, DLDataType{kDLBfloat, 16, 1})).rows_per_chunk == 128);
  CHECK(norm_plan(norm(16384, 16384, DLDataType{kDLBfloat, 16, 1})).chunk_count == 128);
  CHECK(norm_plan(norm(0, 4096, DLDataType{kDLBfloat, 16, 1})).chunk_count == 0);
}

TEST_CASE("norm plan: no more dgamma chunks than an H200 holds backward blocks") {
  // A block that takes a second chunk makes the whole backward wait for it (H = 5120 before
  // the cap: 409 chunks for 396 blocks, RMS backward 0.1865 ms against 0.1446 after).
  for (DLDataType dtype : {DLDataType{kDLBfloat, 16, 1}, DLDataType{kDLFloat, 32, 1}}) {
    for (int64_t hidden = 256; hidden <= kNormMaxHidden; hidden += 256) {
      const NormPlan plan = norm_plan(norm(16384, hidden, dtype, SY_NORM_RMS));
      // 64 Ki registers at 128 a thread, spelled out rather than through the plan's own helper.
      const int64_t blocks = kNormPlanMultiprocessors *
                             std::max<int64_t>(1, 65536 / (int64_t{plan.backward.threads} * 128));
      INFO("hidden " << hidden << " bits " << int(dtype.bits) << " threads " << plan.backward.threads);
      CHECK(plan.chunk_count <= blocks);
    }
  }
  const DLDataType bf16{kDLBfloat, 16, 1};
  const NormPlan h5120 = norm_plan(norm(16384, 5120, bf16, SY_NORM_RMS));
  CHECK(h5120.backward.threads == 160);  // 32 elements a thread; three blocks a multiprocessor
  CHECK(h5120.chunk_count == 391);       // 42 rows each
  const NormPlan h7168 = norm_plan(norm(16384, 7168, bf16, SY_NORM_LAYER));
  CHECK(h7168.backward.threads == 224);
  CHECK(h7168.chunk_count == 261);  // two blocks a multiprocessor: 264
  // 16 elements a thread only where that makes 512 threads (hidden in (7680, 8192]).
  CHECK(norm_plan(norm(16384, 7680, bf16, SY_NORM_RMS)).backward.chunks_per_thread == 4);
  CHECK(norm_plan(norm(16384, 7688, bf16, SY_NORM_RMS)).backward.chunks_per_thread == 2);
  CHECK(norm_plan(norm(16384, 8200, bf16, SY_NORM_RMS)).backward.chunks_per_thread == 4);
}

TEST_CASE("ce plan: block sizes follow the row, never the batch") {
  for (DLDataType dtype : {DLDataType{kDLBfloat, 16, 1}, DLDataType{kDLFloat, 32, 1}}) {
    for (int64_t v : {int64_t{1}, int64_t{50}, int64_t{32000}, int64_t{50257}, int64_t{131072},
                      int64_t{262144}}) {
      sy_ce_problem p{};
      p.struct_size = sizeof p;
      p.rows = 7;
      p.vocab_local = p.vocab_size = v;
      p.tp_size = 1;
      p.logits_dtype = p.grad_dtype = dtype;
      const CePlan a = ce_plan(p);
      p.rows = 2048;
      const CePlan b = ce_plan(p);
      INFO("V " << v);
      CHECK(a.stats_threads == b.stats_threads);
      CHECK(a.fused_threads == b.fused_threads);
      CHECK(a.fused_threads == a.stats_threads);  // grad in forward: the forward's lse bits
      CHECK(a.stats_threads % 32 == 0);
      CHECK(a.stats_threads <= kCeMaxThreads);
      CHECK(a.fused_threads % 32 == 0);
      CHECK(a.fused_threads <= kCeFusedMaxThreads);
      CHECK(a.fused_slots <= kCeFusedSlots);
      CHECK(a.chunks * a.vec >= v);
      // The gradient's slices cover the row, none empty, each within its block's pieces.
      CHECK(a.grad_slices == b.grad_slices);
      CHECK(a.grad_slice_chunks == b.grad_slice_chunks);
      CHECK(a.grad_threads == b.grad_threads);
      if (a.slices) {
        CHECK(int64_t{a.grad_slices} * a.grad_slice_chunks >= a.chunks);
        CHECK(int64_t{a.grad_slices - 1} * a.grad_slice_chunks < a.chunks);
        CHECK(a.grad_slice_chunks <= kCeGradSliceChunks);
        CHECK(a.grad_threads == 32);  // the Grad kernel's launch bounds
        CHECK(int64_t{a.grad_threads} * kCeSliceChunksPerThread >= a.grad_slice_chunks);
      }
      // Rows that fit kCeFusedSlots chunks per thread of 512 threads are kept whole in shared
      // memory.
      if (a.chunks <= int64_t{kCeFusedSlots} * kCeFusedMaxThreads)
        CHECK(int64_t{a.fused_slots} * a.fused_threads >= a.chunks);
      CHECK(a.workspace_bytes == 0);
      // Grad in forward on slices: the persistent kernel's row counter, whatever the rows.
      p.flags = SY_CE_GRAD_IN_FORWARD;
      CHECK(ce_plan(p).workspace_bytes == (a.slices ? kRowClaimsBytes : 0));
      p.rows = 7;
      CHECK(ce_plan(p).workspace_bytes == (a.slices ? kRowClaimsBytes : 0));
    }
  }
  // bf16 [*, 131072]: 512-thread statistics blocks, 512-thread fused blocks keeping 13 of
  // each thread's 32 chunks in shared memory (two such blocks per multiprocessor).
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = 2048;
  p.vocab_local = p.vocab_size = 131072;
  p.tp_size = 1;
  p.logits_dtype = p.grad_dtype = DLDataType{kDLBfloat, 16, 1};
  const CePlan plan = ce_plan(p);
  CHECK(plan.stats_threads == 512);
  CHECK(plan.fused_threads == 512);
  CHECK(plan.fused_slots == 13);
  CHECK(int64_t{kCeFusedBlocksPerSm} * kCeFusedSlots * kCeFusedMaxThreads * 16 <= 227 * 1024);
  // Slices: bf16 131072 = 256 KiB a row, a cluster of 4 blocks of 256 threads holding 64 KiB
  // each; three such blocks (and their static shared memory and the 1 KiB the runtime
  // reserves per block) fit the 228 KiB of a multiprocessor.
  CHECK(plan.slices);
  CHECK(plan.cluster == 4);
  CHECK(plan.slice_chunks == 4096);
  CHECK(plan.slice_threads == 256);
  CHECK(kCeSliceBlocksPerSm * (kCeSliceMaxChunks * 16 + 2048) <= 228 * 1024);
  // Every piece (kCeSliceUnroll chunks a thread) of every slice is whole: the gradient loops
  // take their unguarded path for the whole row.
  CHECK(plan.slice_chunks % (kCeSliceUnroll * plan.slice_threads) == 0);
  CHECK(plan.chunks == int64_t{plan.cluster} * plan.slice_chunks);
  // The gradient's own slices: 64 of 4 KiB per row, blocks of 32 threads, every piece whole.
  CHECK(plan.grad_slices == 64);
  CHECK(plan.grad_slice_chunks == kCeGradSliceChunks);
  CHECK(plan.grad_threads == 32);
  CHECK(plan.grad_slice_chunks % (kCeSliceUnroll * plan.grad_threads) == 0);
  CHECK(ce_forward_collectives(p) == 0);
  p.tp_size = 2;
  p.vocab_local = 65536;
  CHECK(ce_forward_collectives(p) == 1);
  CHECK(ce_plan(p).workspace_bytes == 2 * 2048 * 24);
}
