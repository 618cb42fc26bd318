// liger's cross-entropy kernels (plugins/liger/kernels/ce_device.cuh, the very code the GPU
// runs, dispatch included) executed by the block emulator and checked against the conformance
// suite's float64 reference with its tolerances: per-token forward and backward, the fused
// grad-in-forward kernel (separate and over the logits), every flag, strided and unaligned
// rows (bit-identical to aligned ones), tensor parallelism with the collectives done on the
// host, the label check, and the z-loss extra.
#include "kernels/ce_device.cuh"

#include "block_emulator.hpp"
#include "host_matrix.hpp"

#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_ce.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

namespace {

namespace cf = switchyard::conformance;
namespace lg = switchyard::liger;
using liger_test::HostMatrix;
using lg::Dt;

const char* dt_name(Dt d) { return d == Dt::F32 ? "f32" : d == Dt::BF16 ? "bf16" : "f16"; }

DLDataType dl_of(Dt d) {
  return d == Dt::F32 ? DLDataType{kDLFloat, 32, 1}
                      : d == Dt::BF16 ? DLDataType{kDLBfloat, 16, 1} : DLDataType{kDLFloat, 16, 1};
}

class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed * 6364136223846793005ull + 1442695040888963407ull) {}
  uint64_t next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return state_ >> 11;
  }
  double uniform(double low, double high) {
    return low + (high - low) * static_cast<double>(next() % (1ull << 40)) / double(1ull << 40);
  }
  int64_t integer(int64_t low, int64_t high) {
    return low + static_cast<int64_t>(next() % static_cast<uint64_t>(high - low));
  }

 private:
  uint64_t state_;
};

struct CeCase {
  Dt logits = Dt::BF16;
  Dt grad = Dt::BF16;
  int64_t rows = 7;
  int64_t vocab = 50;
  bool labels64 = true;
  float alpha = 0;
  sy_smoothing smoothing = SY_SMOOTHING_MEGATRON;
  bool ignore = false;
  int64_t ignore_index = -100;
  bool argmax = false;
  bool ties = false;
  float z_loss = 0;
  uint64_t seed = 1;

  std::string describe() const {
    return std::string("logits=") + dt_name(logits) + " grad=" + dt_name(grad) +
           " N=" + std::to_string(rows) + " V=" + std::to_string(vocab) +
           (labels64 ? "" : " labels=i32") + (alpha != 0 ? " alpha=" + std::to_string(alpha) : "") +
           (alpha != 0 ? (smoothing == SY_SMOOTHING_PYTORCH ? "(pytorch)" : "(megatron)") : "") +
           (ignore ? " ignore=" + std::to_string(ignore_index) : "") +
           (argmax ? (ties ? " argmax(ties)" : " argmax") : "") +
           (z_loss != 0 ? " z_loss" : "");
  }
};

struct CeData {
  std::vector<double> logits;  // [N, V], already rounded to the logits dtype
  std::vector<int64_t> labels;
  std::vector<double> scale;   // grad_scale / grad_loss
};

CeData make_data(const CeCase& c) {
  Random random(c.seed);
  CeData d;
  const int64_t v = c.vocab;
  d.logits.resize(static_cast<size_t>(c.rows * v));
  for (int64_t i = 0; i < c.rows; ++i) {
    const double offset = i % 3 == 2 ? 40.0 : 0.0;  // a kernel without max subtraction overflows
    for (int64_t j = 0; j < v; ++j) {
      const double magnitude = random.uniform(0.05, 4.0);
      d.logits[i * v + j] =
          liger_test::round_to(c.logits, offset + (random.next() % 2 ? magnitude : -magnitude));
    }
    if (c.ties && v >= 2) {
      const int64_t a = random.integer(0, v - 1);
      const int64_t b = random.integer(a + 1, v);
      double* row = d.logits.data() + i * v;
      const double top = liger_test::round_to(c.logits, *std::max_element(row, row + v) + 1.0);
      row[a] = row[b] = top;
    }
  }
  for (int64_t i = 0; i < c.rows; ++i) {
    int64_t label = random.integer(0, v);
    if (i % 7 == 3) label = c.ignore_index;        // ignored (or owned by no rank)
    if (i % 7 == 5) label = i % 2 ? -1 : v + i;    // owned by no rank
    d.labels.push_back(label);
    d.scale.push_back(random.uniform(0.05, 1.05));
  }
  return d;
}

cf::CeReferenceProblem reference_problem(const CeCase& c) {
  cf::CeReferenceProblem p;
  p.rows = c.rows;
  p.vocab = c.vocab;
  p.label_smoothing = static_cast<double>(c.alpha);
  p.smoothing = c.smoothing;
  p.ignore_index = c.ignore_index;
  p.flags = c.ignore ? SY_CE_IGNORE_INDEX : 0u;
  return p;
}

// Labels in the case's integer type.
struct Labels {
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;
  bool wide;
  Labels(const std::vector<int64_t>& labels, bool labels64) : i64(labels), wide(labels64) {
    for (int64_t l : labels) i32.push_back(static_cast<int32_t>(l));
  }
  const void* data() const { return wide ? static_cast<const void*>(i64.data()) : i32.data(); }
};

lg::CeRows rows_of(const CeCase& c, const HostMatrix& logits, const Labels& labels,
                   int64_t vocab_start) {
  lg::CeRows r;
  r.logits = logits.data();
  r.logits_stride = logits.stride();
  r.logits_dt = c.logits;
  r.logits_aligned = logits.aligned();
  r.labels = labels.data();
  r.labels64 = labels.wide;
  r.rows = c.rows;
  r.vocab_local = logits.cols();
  r.vocab_start = vocab_start;
  r.vocab_size = c.vocab;
  r.use_ignore_index = c.ignore;
  r.ignore_index = c.ignore_index;
  const double s = cf::smoothing_weight(reference_problem(c));
  r.smoothing = static_cast<float>(s);
  r.smoothing_over_v = static_cast<float>(s / static_cast<double>(c.vocab));
  r.z_loss_scale = c.z_loss;
  r.argmax = c.argmax;
  r.threads = lg::row_threads(logits.cols());
  return r;
}

// The forward outputs, poisoned (NaN, sentinel) so that an unwritten one shows.
struct ForwardOut {
  std::vector<float> loss, lse;
  std::vector<int64_t> argmax;
  explicit ForwardOut(int64_t rows)
      : loss(static_cast<size_t>(rows), std::numeric_limits<float>::quiet_NaN()),
        lse(static_cast<size_t>(rows), std::numeric_limits<float>::quiet_NaN()),
        argmax(static_cast<size_t>(rows), -777) {}
  lg::CeForwardOut view(bool with_argmax) {
    return lg::CeForwardOut{loss.data(), lse.data(), with_argmax ? argmax.data() : nullptr};
  }
};

std::vector<double> doubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

void expect_close(const std::string& what, const std::vector<double>& got,
                  const std::vector<double>& expected, const cf::Tolerance& tolerance,
                  int64_t columns = 0, const std::vector<double>* scale = nullptr) {
  if (const auto m = cf::find_mismatch(got, expected, tolerance, scale))
    FAIL_CHECK(cf::describe_mismatch(what, *m, columns));
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

void expect_forward(const CeCase& c, const ForwardOut& out, const cf::CeReferenceForward& ref,
                    const std::string& who) {
  std::vector<double> loss_scale(ref.loss.size());
  for (size_t i = 0; i < ref.loss.size(); ++i)
    loss_scale[i] = std::fmax(std::fabs(ref.loss[i]), std::fabs(ref.lse[i]));
  expect_close(who + "loss", doubles(out.loss), ref.loss,
               cf::statistic_tolerance(dl_of(c.logits), max_abs(ref.loss)), 0, &loss_scale);
  expect_close(who + "lse", doubles(out.lse), ref.lse,
               cf::statistic_tolerance(dl_of(c.logits), max_abs(ref.lse)));
  if (c.argmax)
    for (int64_t i = 0; i < c.rows; ++i) {
      CAPTURE(i);
      CHECK(out.argmax[static_cast<size_t>(i)] == ref.argmax[static_cast<size_t>(i)]);
    }
}

std::vector<double> columns_of(const std::vector<double>& m, int64_t rows, int64_t vocab,
                               int64_t start, int64_t width) {
  std::vector<double> out(static_cast<size_t>(rows * width));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < width; ++j) out[i * width + j] = m[i * vocab + start + j];
  return out;
}

void expect_grad(const CeCase& c, const HostMatrix& grad, const std::vector<double>& ref,
                 const std::vector<double>& magnitude, const std::string& who) {
  expect_close(who, grad.values(), ref, cf::elementwise_tolerance(dl_of(c.grad), max_abs(ref)),
               grad.cols(), &magnitude);
}

// Per-token: stats kernel, then the gradient kernel from the reference lse (as the suite does).
void check_per_token(const CeCase& c, int64_t stride_pad = 0, int64_t misalign = 0) {
  CAPTURE(c.describe());
  CAPTURE(stride_pad);
  CAPTURE(misalign);
  const CeData d = make_data(c);
  const cf::CeReferenceProblem rp = reference_problem(c);
  HostMatrix logits(c.logits, c.rows, c.vocab, stride_pad ? c.vocab + stride_pad : 0, misalign);
  logits.fill(d.logits);
  const Labels labels(d.labels, c.labels64);
  const lg::CeRows r = rows_of(c, logits, labels, 0);
  ForwardOut out(c.rows);
  lg::dispatch_ce_stats(liger_emu::Launch{}, r, out.view(c.argmax));
  const auto ref = cf::reference_ce_forward(rp, d.logits, d.labels, nullptr);
  expect_forward(c, out, ref, "forward ");
  CHECK(logits.values() == d.logits);  // logits survive forward

  std::vector<float> lse_in;
  for (double v : ref.lse) lse_in.push_back(static_cast<float>(v));
  HostMatrix grad(c.grad, c.rows, c.vocab, stride_pad ? c.vocab + stride_pad : 0, misalign);
  lg::CeGradOut g;
  std::vector<float> scale(d.scale.begin(), d.scale.end());
  g.scale = scale.data();
  g.lse = lse_in.data();
  g.grad = grad.data();
  g.grad_stride = grad.stride();
  g.grad_dt = c.grad;
  g.grad_aligned = grad.aligned();
  lg::dispatch_ce_gradient(liger_emu::Launch{}, r, g);
  const auto ref_grad = cf::reference_ce_backward(rp, d.logits, d.labels, doubles(lse_in), d.scale);
  expect_grad(c, grad, ref_grad.grad, ref_grad.grad_magnitude, "backward grad_logits");
}

// Grad in forward, TP1: the fused kernel, into a separate buffer or over the logits.
HostMatrix check_fused(const CeCase& c, bool over_logits, int64_t stride_pad = 0,
                       int64_t misalign = 0) {
  CAPTURE(c.describe());
  CAPTURE(over_logits);
  const CeData d = make_data(c);
  HostMatrix logits(c.logits, c.rows, c.vocab, stride_pad ? c.vocab + stride_pad : 0, misalign);
  logits.fill(d.logits);
  HostMatrix separate(c.grad, c.rows, c.vocab, stride_pad ? c.vocab + stride_pad : 0, misalign);
  HostMatrix& grad = over_logits ? logits : separate;
  const Labels labels(d.labels, c.labels64);
  const lg::CeRows r = rows_of(c, logits, labels, 0);
  ForwardOut out(c.rows);
  std::vector<float> scale(d.scale.begin(), d.scale.end());
  lg::CeGradOut g;
  g.scale = scale.data();
  g.grad = grad.data();
  g.grad_stride = grad.stride();
  g.grad_dt = over_logits ? c.logits : c.grad;
  g.grad_aligned = grad.aligned();
  lg::dispatch_ce_fused(liger_emu::Launch{}, r, out.view(c.argmax), g);
  const auto ref = cf::reference_ce_forward(reference_problem(c), d.logits, d.labels, &d.scale);
  expect_forward(c, out, ref, "fused ");
  CeCase as_grad = c;
  if (over_logits) as_grad.grad = c.logits;
  expect_grad(as_grad, grad, ref.grad, ref.grad_magnitude, "fused grad_logits");
  if (!over_logits) CHECK(logits.values() == d.logits);
  return std::move(grad);
}

}  // namespace

TEST_CASE("per-token cross entropy: every dtype pair, vocabulary sizes from 1 to 16032") {
  for (Dt logits : {Dt::F32, Dt::BF16, Dt::F16}) {
    for (int64_t vocab : {1, 3, 50, 4099, 16032}) {
      CeCase c;
      c.logits = logits;
      c.grad = logits;
      c.vocab = vocab;
      c.rows = vocab > 1000 ? 3 : 7;
      c.argmax = true;
      check_per_token(c);
    }
    for (Dt grad : {Dt::F32, Dt::BF16, Dt::F16}) {
      CeCase c;
      c.logits = logits;
      c.grad = grad;
      check_per_token(c);
    }
  }
}

TEST_CASE("per-token cross entropy: smoothing, ignore_index, int32 labels, argmax ties") {
  for (Dt logits : {Dt::F32, Dt::BF16}) {
    CeCase c;
    c.logits = c.grad = logits;
    c.alpha = 0.1f;
    c.smoothing = SY_SMOOTHING_MEGATRON;
    check_per_token(c);
    c.smoothing = SY_SMOOTHING_PYTORCH;
    check_per_token(c);
    c.vocab = 3;
    check_per_token(c);
    c = CeCase{};
    c.logits = c.grad = logits;
    c.ignore = true;
    check_per_token(c);
    c.ignore_index = 7;  // a real vocabulary id
    c.labels64 = false;
    check_per_token(c);
    c = CeCase{};
    c.logits = c.grad = logits;
    c.argmax = c.ties = true;
    c.vocab = 700;
    check_per_token(c);
    c.ignore = true;
    c.alpha = 0.2f;
    c.smoothing = SY_SMOOTHING_PYTORCH;
    c.labels64 = false;
    check_per_token(c);  // everything at once
  }
}

TEST_CASE("grad in forward (fused kernel): separate buffer and over the logits") {
  for (Dt logits : {Dt::F32, Dt::BF16, Dt::F16}) {
    for (int64_t vocab : {1, 50, 4099}) {
      CeCase c;
      c.logits = logits;
      c.grad = logits == Dt::F32 ? Dt::BF16 : Dt::F32;
      c.vocab = vocab;
      c.rows = vocab > 1000 ? 3 : 7;
      c.argmax = true;
      c.ignore = true;
      c.alpha = 0.1f;
      check_fused(c, false);
      check_fused(c, true);
    }
  }
}

TEST_CASE("strided and unaligned rows give the same bits as aligned ones") {
  for (Dt logits : {Dt::F32, Dt::BF16}) {
    CeCase c;
    c.logits = c.grad = logits;
    c.vocab = 4099;  // 512 threads, a partial last chunk
    c.rows = 3;
    c.argmax = true;
    c.alpha = 0.1f;
    c.ignore = true;
    check_per_token(c, 0, 0);
    check_per_token(c, 5, 0);
    check_per_token(c, 0, 2);
    c.vocab = 4096;  // whole chunks only: the aligned path end to end
    const HostMatrix aligned = check_fused(c, false, 0, 0);
    const HostMatrix shifted = check_fused(c, false, 3, 2);
    CHECK(aligned.same_bits(shifted));
    const HostMatrix in_place = check_fused(c, true, 0, 0);
    if (c.grad == c.logits) CHECK(aligned.same_bits(in_place));
  }
}

TEST_CASE("tensor parallelism: partial stats, host collectives, combine, finalize, gradient") {
  struct Split {
    int64_t vocab;
    std::vector<int64_t> columns;
  };
  for (const Split& split : {Split{50, {17, 33}}, Split{50, {3, 1, 46}}, Split{4099, {2048, 2051}},
                             Split{50, {10, 10, 10, 10, 10}}}) {
    for (bool argmax_ties : {false, true}) {
      CeCase c;
      c.logits = Dt::BF16;
      c.grad = Dt::F32;
      c.vocab = split.vocab;
      c.rows = split.vocab > 1000 ? 3 : 7;
      c.argmax = true;
      c.ties = argmax_ties;
      c.ignore = true;
      c.alpha = 0.1f;
      c.smoothing = argmax_ties ? SY_SMOOTHING_PYTORCH : SY_SMOOTHING_MEGATRON;
      CAPTURE(c.describe());
      CAPTURE(split.columns.size());
      const CeData d = make_data(c);
      const Labels labels(d.labels, c.labels64);
      const int64_t n = c.rows;
      const size_t ranks = split.columns.size();

      struct Rank {
        int64_t start = 0;
        HostMatrix logits;
        HostMatrix grad;
        std::vector<float> local_max, global_max, local_sum_exp, packed;
        std::vector<int64_t> candidates;
        lg::CeRows rows;
        lg::CeTpScratch scratch;
      };
      std::vector<std::unique_ptr<Rank>> rank;
      int64_t start = 0;
      for (size_t k = 0; k < ranks; ++k) {
        const int64_t width = split.columns[k];
        auto r = std::unique_ptr<Rank>(new Rank{start, HostMatrix(c.logits, n, width),
                                                HostMatrix(c.grad, n, width), {}, {}, {}, {}, {},
                                                {}, {}});
        r->logits.fill(columns_of(d.logits, n, c.vocab, start, width));
        const float nan = std::numeric_limits<float>::quiet_NaN();
        r->local_max.assign(n, nan);
        r->global_max.assign(n, nan);
        r->local_sum_exp.assign(n, nan);
        r->packed.assign(3 * n, nan);
        r->candidates.assign(n, -555);
        r->rows = rows_of(c, r->logits, labels, start);
        r->scratch = lg::CeTpScratch{r->local_max.data(), r->global_max.data(),
                                     r->local_sum_exp.data(), r->packed.data(),
                                     r->candidates.data()};
        rank.push_back(std::move(r));
        start += width;
      }
      // 1. partial stats; 2. MAX; 3. combine; 4. MIN; 5. SUM; 6. finalize; 7. gradient.
      for (auto& r : rank) lg::dispatch_ce_partial_stats(liger_emu::Launch{}, r->rows, r->scratch);
      for (int64_t i = 0; i < n; ++i) {
        float m = -INFINITY;
        for (auto& r : rank) m = std::fmax(m, r->local_max[i]);
        for (auto& r : rank) r->global_max[i] = m;
      }
      for (auto& r : rank) lg::dispatch_ce_tp_combine(liger_emu::Launch{}, r->rows, r->scratch);
      for (int64_t i = 0; i < n; ++i) {
        int64_t least = std::numeric_limits<int64_t>::max();
        for (auto& r : rank) least = std::min(least, r->candidates[i]);
        for (auto& r : rank) r->candidates[i] = least;
      }
      for (int64_t k = 0; k < 3 * n; ++k) {
        float sum = 0;
        for (auto& r : rank) sum += r->packed[k];
        for (auto& r : rank) r->packed[k] = sum;
      }
      const auto ref = cf::reference_ce_forward(reference_problem(c), d.logits, d.labels, &d.scale);
      std::vector<float> scale(d.scale.begin(), d.scale.end());
      for (size_t k = 0; k < ranks; ++k) {
        Rank& r = *rank[k];
        ForwardOut out(n);
        lg::dispatch_ce_tp_finalize(liger_emu::Launch{}, r.rows, r.scratch, out.view(true));
        expect_forward(c, out, ref, "rank " + std::to_string(k) + " ");
        lg::CeGradOut g;
        g.scale = scale.data();
        g.lse = out.lse.data();
        g.grad = r.grad.data();
        g.grad_stride = r.grad.stride();
        g.grad_dt = c.grad;
        g.grad_aligned = r.grad.aligned();
        lg::dispatch_ce_gradient(liger_emu::Launch{}, r.rows, g);
        expect_grad(c, r.grad, columns_of(ref.grad, n, c.vocab, r.start, r.grad.cols()),
                    columns_of(ref.grad_magnitude, n, c.vocab, r.start, r.grad.cols()),
                    "rank " + std::to_string(k) + " grad_logits");
      }
    }
  }
}

TEST_CASE("label check: the first row outside [0, V) that is not ignored") {
  CeCase c;
  c.rows = 600;  // more than one block of the check kernel
  c.vocab = 50;
  c.ignore = true;
  std::vector<int64_t> raw(600, 7);
  raw[17] = -100;  // ignored
  raw[400] = 50;   // bad
  raw[555] = -3;   // bad, later
  for (bool wide : {true, false}) {
    const Labels labels(raw, wide);
    HostMatrix logits(Dt::F32, c.rows, c.vocab);
    const lg::CeRows r = rows_of(c, logits, labels, 0);
    unsigned long long first_bad = ~0ull;
    lg::dispatch_ce_check_labels(liger_emu::Launch{}, r, &first_bad);
    CHECK(first_bad == 400);
  }
  std::vector<int64_t> good(600, 49);
  good[3] = -100;
  const Labels labels(good, true);
  HostMatrix logits(Dt::F32, c.rows, c.vocab);
  unsigned long long first_bad = ~0ull;
  lg::dispatch_ce_check_labels(liger_emu::Launch{}, rows_of(c, logits, labels, 0), &first_bad);
  CHECK(first_bad == ~0ull);
}

TEST_CASE("z-loss extra: loss + zs lse^2, gradient + 2 zs lse p, ignored rows untouched") {
  CeCase c;
  c.logits = Dt::F32;
  c.grad = Dt::F32;
  c.ignore = true;
  c.z_loss = 1e-2f;
  const CeData d = make_data(c);
  HostMatrix logits(c.logits, c.rows, c.vocab);
  logits.fill(d.logits);
  HostMatrix grad(c.grad, c.rows, c.vocab);
  const Labels labels(d.labels, true);
  ForwardOut out(c.rows);
  std::vector<float> scale(d.scale.begin(), d.scale.end());
  lg::CeGradOut g;
  g.scale = scale.data();
  g.grad = grad.data();
  g.grad_stride = grad.stride();
  g.grad_dt = c.grad;
  g.grad_aligned = grad.aligned();
  lg::dispatch_ce_fused(liger_emu::Launch{}, rows_of(c, logits, labels, 0), out.view(false), g);
  const auto ref = cf::reference_ce_forward(reference_problem(c), d.logits, d.labels, &d.scale);
  std::vector<double> loss = ref.loss, expected_grad = ref.grad;
  for (int64_t i = 0; i < c.rows; ++i) {
    if (cf::row_ignored(reference_problem(c), d.labels[i])) continue;
    const double lse = ref.lse[i];
    loss[i] += 1e-2 * lse * lse;
    for (int64_t j = 0; j < c.vocab; ++j)
      expected_grad[i * c.vocab + j] +=
          d.scale[i] * 2 * 1e-2 * lse * std::exp(d.logits[i * c.vocab + j] - lse);
  }
  expect_close("z-loss loss", doubles(out.loss), loss, cf::statistic_tolerance(dl_of(Dt::F32), 0),
               0, &ref.lse);
  expect_grad(c, grad, expected_grad, ref.grad_magnitude, "z-loss grad_logits");
  CHECK(liger_emu::barriers_passed() > 0);
}
