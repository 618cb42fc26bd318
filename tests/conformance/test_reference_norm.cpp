// The float64 normalization reference against hand-derived values and finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <switchyard/conformance/reference_norm.hpp>

using namespace switchyard::conformance;

namespace {

NormReferenceProblem problem(sy_norm_kind kind, int64_t rows, int64_t hidden, uint32_t flags = 0,
                             double eps = 0) {
  NormReferenceProblem p;
  p.kind = kind;
  p.rows = rows;
  p.hidden = hidden;
  p.flags = flags;
  p.eps = eps;
  return p;
}

}  // namespace

TEST_CASE("reference norm: LayerNorm and RMSNorm of one row by hand") {
  NormReferenceForwardInput in;
  in.x = {1, 3};
  in.gamma = {2, 0.5};
  in.beta = {0.25, -1};
  const auto ln = reference_norm_forward(problem(SY_NORM_LAYER, 1, 2), in);
  CHECK(ln.mean[0] == 2);
  CHECK(ln.rstd[0] == 1);  // biased variance: ((1-2)^2 + (3-2)^2) / 2
  CHECK(ln.y[0] == doctest::Approx(-2 + 0.25));
  CHECK(ln.y[1] == doctest::Approx(0.5 - 1));

  in.x = {3, 4};
  const auto rms = reference_norm_forward(problem(SY_NORM_RMS, 1, 2), in);
  const double rstd = 1 / std::sqrt(12.5);
  CHECK(rms.rstd[0] == doctest::Approx(rstd).epsilon(1e-15));
  CHECK(rms.y[0] == doctest::Approx(3 * rstd * 2).epsilon(1e-15));  // no beta for RMSNorm
  in.gamma.clear();
  const auto l2 = reference_norm_forward(problem(SY_NORM_L2, 1, 2), in);
  CHECK(l2.y[1] == doctest::Approx(4 * rstd).epsilon(1e-15));
}

TEST_CASE("reference norm: eps, zero-centred gamma and a one-element row") {
  NormReferenceForwardInput in;
  in.x = {7};
  in.gamma = {0};
  in.beta = {0.5};
  const auto p = problem(SY_NORM_LAYER, 1, 1, SY_NORM_ZERO_CENTERED_GAMMA, 1e-5);
  const auto out = reference_norm_forward(p, in);
  CHECK(out.rstd[0] == doctest::Approx(1 / std::sqrt(1e-5)).epsilon(1e-12));
  CHECK(out.y[0] == 0.5);  // x - mean == 0: only beta remains
  in.gamma = {-0.5};
  in.x = {2};
  const auto rms =
      reference_norm_forward(problem(SY_NORM_RMS, 1, 1, SY_NORM_ZERO_CENTERED_GAMMA), in);
  CHECK(rms.y[0] == doctest::Approx(0.5));  // x_hat = 1, gamma_eff = 1 - 0.5
}

TEST_CASE("reference norm: the residual is added and rounded before normalising") {
  NormReferenceForwardInput in;
  in.x = {1, 2};
  in.residual = {0.25, 0.5};
  in.gamma = {1, 1};
  in.round_to_x_dtype = [](double v) { return std::floor(v); };  // a visible rounding
  const auto out = reference_norm_forward(problem(SY_NORM_RMS, 1, 2, SY_NORM_RESIDUAL), in);
  CHECK(out.h == std::vector<double>{1, 2});
  CHECK(out.rstd[0] == doctest::Approx(1 / std::sqrt(2.5)).epsilon(1e-15));
}

// d(sum dy * y)/dx and /dgamma, /dbeta by central differences, for every kind and flag mix.
TEST_CASE("reference norm: backward is the derivative of sum(dy * y)") {
  const int64_t rows = 2, hidden = 5;
  const std::vector<double> x{0.3, -1.2, 2.2, 0.1, -0.4, 1.0, 4.5, -3.0, 0.25, 1.75};
  const std::vector<double> residual{0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7, 0.8, -0.9, 1.0};
  const std::vector<double> dy{0.5, -0.25, 1.0, 0.75, -1.5, 0.2, 0.4, -0.6, 0.8, -1.0};
  // Dyadic, so that 1 + gamma (+- h) is exact in fp32 (zero-centred gamma is added in fp32).
  const std::vector<double> gamma{1.125, 0.875, -0.75, 1.25, 0.5};
  const std::vector<double> beta{0.1, -0.2, 0.3, -0.4, 0.5};
  const std::vector<double> d_res{0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1};
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2})
    for (uint32_t flags : {0u, unsigned{SY_NORM_ZERO_CENTERED_GAMMA}, unsigned{SY_NORM_RESIDUAL},
                           unsigned{SY_NORM_MEMORY_EFFICIENT}}) {
      CAPTURE(kind);
      CAPTURE(flags);
      const auto p = problem(kind, rows, hidden, flags, 1e-3);
      auto forward_input = [&](const std::vector<double>& xs, const std::vector<double>& gs,
                               const std::vector<double>& bs) {
        NormReferenceForwardInput in;
        in.x = xs;
        if (flags & SY_NORM_RESIDUAL) in.residual = residual;
        if (kind != SY_NORM_L2) in.gamma = gs;
        if (kind == SY_NORM_LAYER) in.beta = bs;
        return in;
      };
      auto total = [&](const std::vector<double>& xs, const std::vector<double>& gs,
                       const std::vector<double>& bs) {
        const auto out = reference_norm_forward(p, forward_input(xs, gs, bs));
        double sum = 0;
        for (size_t k = 0; k < dy.size(); ++k) sum += dy[k] * out.y[k];
        if (flags & SY_NORM_RESIDUAL)
          for (size_t k = 0; k < dy.size(); ++k) sum += d_res[k] * out.h[k];
        return sum;
      };
      const auto fwd = reference_norm_forward(p, forward_input(x, gamma, beta));
      NormReferenceBackwardInput in;
      in.dy = dy;
      in.x_or_y = (flags & SY_NORM_MEMORY_EFFICIENT) ? fwd.y : fwd.h;
      if (kind != SY_NORM_L2) in.gamma = gamma;
      if (kind == SY_NORM_LAYER) in.beta = beta;
      in.mean = fwd.mean;
      in.rstd = fwd.rstd;
      if (flags & SY_NORM_RESIDUAL) in.d_residual_out = d_res;
      const auto back = reference_norm_backward(p, in);
      const double h = 1e-6;
      for (size_t k = 0; k < x.size(); ++k) {
        auto up = x, down = x;
        up[k] += h;
        down[k] -= h;
        CHECK(back.dx[k] ==
              doctest::Approx((total(up, gamma, beta) - total(down, gamma, beta)) / (2 * h))
                  .epsilon(1e-6));
      }
      // y is linear in gamma and beta: a power-of-two step is exact.
      const double step = 1.0 / 1024;
      for (int64_t j = 0; j < hidden && kind != SY_NORM_L2; ++j) {
        auto up = gamma, down = gamma;
        up[j] += step;
        down[j] -= step;
        CHECK(back.dgamma[j] ==
              doctest::Approx((total(x, up, beta) - total(x, down, beta)) / (2 * step))
                  .epsilon(1e-9));
      }
      for (int64_t j = 0; j < hidden && kind == SY_NORM_LAYER; ++j) {
        auto up = beta, down = beta;
        up[j] += step;
        down[j] -= step;
        CHECK(back.dbeta[j] ==
              doctest::Approx((total(x, gamma, up) - total(x, gamma, down)) / (2 * step))
                  .epsilon(1e-9));
      }
    }
}

TEST_CASE("reference norm: accumulation adds to the given dgamma and dbeta") {
  NormReferenceBackwardInput in;
  in.dy = {1, 2};
  in.x_or_y = {1, 3};
  in.gamma = {1, 1};
  in.beta = {0, 0};
  in.mean = {2};
  in.rstd = {1};
  in.dgamma_initial = {10, 20};
  in.dbeta_initial = {-1, -2};
  const auto out =
      reference_norm_backward(problem(SY_NORM_LAYER, 1, 2, SY_NORM_ACCUMULATE_GRAD_WEIGHT), in);
  CHECK(out.dgamma == std::vector<double>{10 - 1, 20 + 2});  // dy * x_hat, x_hat = {-1, 1}
  CHECK(out.dbeta == std::vector<double>{0, 0});
  CHECK(out.dgamma_scale == std::vector<double>{11, 22});
}

TEST_CASE("reference norm: magnitudes bound the terms where a value cancels") {
  // RMSNorm of one element: x_hat^2 = h^2 / (h^2 + eps), so dx is eps/(h^2 + eps) of its
  // terms; the magnitude keeps the size of the terms.
  NormReferenceForwardInput in;
  in.x = {0.5};
  in.gamma = {2};
  const auto p = problem(SY_NORM_RMS, 1, 1, 0, 1e-5);
  const auto fwd = reference_norm_forward(p, in);
  CHECK(fwd.y_magnitude[0] == doctest::Approx(std::fabs(fwd.y[0])));
  NormReferenceBackwardInput b;
  b.dy = {1};
  b.x_or_y = fwd.h;
  b.gamma = in.gamma;
  b.rstd = fwd.rstd;
  const auto back = reference_norm_backward(p, b);
  CHECK(std::fabs(back.dx[0]) < 1e-3 * back.dx_magnitude[0]);
  CHECK(back.dx_magnitude[0] == doctest::Approx(2 * fwd.rstd[0] * (1 + 0.5 * 0.5 / (0.25 + 1e-5))));
}
