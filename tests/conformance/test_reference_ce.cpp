// The float64 cross-entropy reference against values derived by hand and by finite
// differences, and its two smoothing conventions against -sum(q * log p).
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <switchyard/conformance/reference_ce.hpp>

using namespace switchyard::conformance;

namespace {

CeReferenceProblem problem(int64_t rows, int64_t vocab, uint32_t flags = 0) {
  CeReferenceProblem p;
  p.rows = rows;
  p.vocab = vocab;
  p.flags = flags;
  return p;
}

double log_sum_exp(const std::vector<double>& z) {
  double s = 0;
  for (double v : z) s += std::exp(v);
  return std::log(s);
}

}  // namespace

TEST_CASE("reference CE: loss, lse, argmax and gradient of one row by hand") {
  const std::vector<double> z{1, 2, 3};
  const std::vector<double> g{0.5};
  const auto out = reference_ce_forward(problem(1, 3), z, {0}, &g);
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  CHECK(out.lse[0] == doctest::Approx(lse).epsilon(1e-15));
  CHECK(out.loss[0] == doctest::Approx(lse - 1).epsilon(1e-15));
  CHECK(out.argmax[0] == 2);
  CHECK(out.grad[0] == doctest::Approx(0.5 * (std::exp(1 - lse) - 1)).epsilon(1e-14));
  CHECK(out.grad[2] == doctest::Approx(0.5 * std::exp(3 - lse)).epsilon(1e-14));
}

TEST_CASE("reference CE: argmax takes the lowest id on ties") {
  const auto out = reference_ce_forward(problem(2, 4), {5, 1, 5, 0, -1, 7, 2, 7}, {0, 0}, nullptr);
  CHECK(out.argmax[0] == 0);
  CHECK(out.argmax[1] == 1);
  CHECK(out.grad.empty());
}

TEST_CASE("reference CE: a label owned by no rank uses the row max and no one-hot") {
  const std::vector<double> z{1, 2, 3};
  const std::vector<double> g{1};
  for (int64_t label : {int64_t{-1}, int64_t{3}, int64_t{-100}}) {
    const auto out = reference_ce_forward(problem(1, 3), z, {label}, &g);
    CHECK(out.loss[0] == doctest::Approx(out.lse[0] - 3).epsilon(1e-15));
    CHECK(out.grad[2] == doctest::Approx(std::exp(3 - out.lse[0])).epsilon(1e-14));
  }
}

TEST_CASE("reference CE: ignored rows have zero loss and gradient but keep lse") {
  const std::vector<double> z{1, 2, 3, 4, 5, 6};
  const std::vector<double> g{1, 1};
  auto p = problem(2, 3, SY_CE_IGNORE_INDEX);
  p.ignore_index = 2;  // a real id: row 1's label
  const auto out = reference_ce_forward(p, z, {1, 2}, &g);
  CHECK(out.loss[0] > 0);
  CHECK(out.loss[1] == 0);
  CHECK(out.lse[1] == doctest::Approx(6 + log_sum_exp({-2, -1, 0})).epsilon(1e-15));
  for (int j = 0; j < 3; ++j) CHECK(out.grad[3 + j] == 0);
  // Without the flag the same label is an ordinary target.
  const auto plain = reference_ce_forward(problem(2, 3), z, {1, 2}, &g);
  CHECK(plain.loss[1] == doctest::Approx(plain.lse[1] - 6).epsilon(1e-15));
}

TEST_CASE("reference CE: both smoothing conventions equal -sum(q log p) with their own q") {
  const std::vector<double> z{0.5, -1.25, 2.0, 0.75, 1.5};
  const int64_t v = 5, t = 3;
  const double alpha = 0.2;
  for (sy_smoothing convention : {SY_SMOOTHING_MEGATRON, SY_SMOOTHING_PYTORCH}) {
    CAPTURE(convention);
    auto p = problem(1, v);
    p.label_smoothing = alpha;
    p.smoothing = convention;
    const double s = convention == SY_SMOOTHING_MEGATRON ? alpha * v / (v - 1) : alpha;
    CHECK(smoothing_weight(p) == doctest::Approx(s).epsilon(1e-15));
    const double lse = log_sum_exp(z);
    double expected = 0;
    for (int64_t j = 0; j < v; ++j) {
      const double q = s / v + (j == t ? 1 - s : 0);
      expected -= q * (z[j] - lse);
    }
    const std::vector<double> g{1};
    const auto out = reference_ce_forward(p, z, {t}, &g);
    CHECK(out.loss[0] == doctest::Approx(expected).epsilon(1e-14));
    double grad_sum = 0;  // p and q both sum to one
    for (double d : out.grad) grad_sum += d;
    CHECK(std::fabs(grad_sum) < 1e-14);
  }
  auto one = problem(1, 1);
  one.label_smoothing = 0.3;
  CHECK(smoothing_weight(one) == 0);  // V = 1: nothing to smooth over
  const auto out = reference_ce_forward(one, {4.0}, {0}, nullptr);
  CHECK(out.loss[0] == 0);
}

TEST_CASE("reference CE: the gradient is the derivative of sum_i g_i * loss_i") {
  const int64_t rows = 2, v = 6;
  std::vector<double> z{0.3, -1.2, 2.2, 0.1, -0.4, 1.0, 5.0, 4.5, -3.0, 0.25, 1.75, 2.5};
  const std::vector<int64_t> labels{2, 5};
  const std::vector<double> g{0.7, 1.3};
  for (sy_smoothing convention : {SY_SMOOTHING_MEGATRON, SY_SMOOTHING_PYTORCH}) {
    auto p = problem(rows, v);
    p.label_smoothing = 0.1;
    p.smoothing = convention;
    const auto out = reference_ce_forward(p, z, labels, &g);
    auto total = [&](const std::vector<double>& logits) {
      const auto o = reference_ce_forward(p, logits, labels, nullptr);
      return g[0] * o.loss[0] + g[1] * o.loss[1];
    };
    for (size_t k = 0; k < z.size(); ++k) {
      const double h = 1e-6;
      auto up = z, down = z;
      up[k] += h;
      down[k] -= h;
      CHECK(out.grad[k] == doctest::Approx((total(up) - total(down)) / (2 * h)).epsilon(1e-7));
    }
    // Backward from the same lse gives the same gradient.
    const auto back = reference_ce_backward(p, z, labels, out.lse, g);
    for (size_t k = 0; k < z.size(); ++k)
      CHECK(back.grad[k] == doctest::Approx(out.grad[k]).epsilon(1e-14));
  }
}

TEST_CASE("reference CE: large logits do not overflow") {
  const auto out = reference_ce_forward(problem(1, 2), {1000.0, 999.0}, {1}, nullptr);
  CHECK(std::isfinite(out.lse[0]));
  CHECK(out.loss[0] == doctest::Approx(1 + std::log1p(std::exp(-1.0))).epsilon(1e-12));
}

TEST_CASE("reference CE: wrong sizes are refused with a message") {
  CHECK_THROWS_WITH_AS(reference_ce_forward(problem(2, 3), {1, 2, 3}, {0, 0}, nullptr),
                       doctest::Contains("rows*vocab"), std::invalid_argument);
}
