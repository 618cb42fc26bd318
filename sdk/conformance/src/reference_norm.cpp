#include <cmath>
#include <stdexcept>
#include <string>
#include <switchyard/conformance/reference_norm.hpp>

namespace switchyard::conformance {
namespace {

bool has(uint32_t flags, uint32_t flag) { return (flags & flag) != 0; }

void require_size(const std::vector<double>& v, int64_t size, const char* what) {
  if (static_cast<int64_t>(v.size()) != size)
    throw std::invalid_argument(std::string("reference_norm: ") + what + " holds " +
                                std::to_string(v.size()) + " values, expected " +
                                std::to_string(size));
}

// gamma_eff = gamma, or 1 + gamma added in fp32 (SY_NORM_ZERO_CENTERED_GAMMA, TE's form).
double gamma_eff(const NormReferenceProblem& problem, const std::vector<double>& gamma, int64_t j) {
  if (problem.kind == SY_NORM_L2) return 1.0;
  if (has(problem.flags, SY_NORM_ZERO_CENTERED_GAMMA))
    return static_cast<double>(1.0f + static_cast<float>(gamma[j]));
  return gamma[j];
}

}  // namespace

NormReferenceForward reference_norm_forward(const NormReferenceProblem& problem,
                                            const NormReferenceForwardInput& input) {
  const int64_t rows = problem.rows;
  const int64_t hidden = problem.hidden;
  const bool layer = problem.kind == SY_NORM_LAYER;
  require_size(input.x, rows * hidden, "x");
  if (has(problem.flags, SY_NORM_RESIDUAL)) require_size(input.residual, rows * hidden, "residual");
  if (problem.kind != SY_NORM_L2) require_size(input.gamma, hidden, "gamma");
  if (!input.beta.empty()) require_size(input.beta, hidden, "beta");

  NormReferenceForward out;
  out.h = input.x;
  out.h_magnitude.resize(rows * hidden);
  for (int64_t k = 0; k < rows * hidden; ++k) out.h_magnitude[k] = std::fabs(input.x[k]);
  if (has(problem.flags, SY_NORM_RESIDUAL))
    for (int64_t k = 0; k < rows * hidden; ++k) {
      const double sum = input.x[k] + input.residual[k];
      out.h[k] = input.round_to_x_dtype ? input.round_to_x_dtype(sum) : sum;
      out.h_magnitude[k] += std::fabs(input.residual[k]);
    }
  out.y.resize(rows * hidden);
  out.y_magnitude.resize(rows * hidden);
  out.mean.assign(rows, 0.0);
  out.rstd.resize(rows);

  for (int64_t i = 0; i < rows; ++i) {
    const double* h = out.h.data() + i * hidden;
    double mean = 0;
    if (layer) {
      for (int64_t j = 0; j < hidden; ++j) mean += h[j];
      mean /= static_cast<double>(hidden);
    }
    double second_moment = 0;  // variance (LN) or mean of squares (RMS, L2)
    for (int64_t j = 0; j < hidden; ++j) second_moment += (h[j] - mean) * (h[j] - mean);
    second_moment /= static_cast<double>(hidden);
    const double rstd = 1.0 / std::sqrt(second_moment + problem.eps);
    out.mean[i] = mean;
    out.rstd[i] = rstd;
    for (int64_t j = 0; j < hidden; ++j) {
      const double x_hat = (h[j] - mean) * rstd;
      double y = x_hat * gamma_eff(problem, input.gamma, j);
      double magnitude = std::fabs(y);
      if (layer && !input.beta.empty()) {
        y += input.beta[j];
        magnitude += std::fabs(input.beta[j]);
      }
      out.y[i * hidden + j] = y;
      out.y_magnitude[i * hidden + j] = magnitude;
    }
  }
  return out;
}

NormReferenceBackward reference_norm_backward(const NormReferenceProblem& problem,
                                              const NormReferenceBackwardInput& input) {
  const int64_t rows = problem.rows;
  const int64_t hidden = problem.hidden;
  const bool layer = problem.kind == SY_NORM_LAYER;
  const bool memory_efficient = has(problem.flags, SY_NORM_MEMORY_EFFICIENT);
  const bool with_gamma = problem.kind != SY_NORM_L2;
  const bool with_beta = layer && !input.beta.empty();
  const bool accumulate = has(problem.flags, SY_NORM_ACCUMULATE_GRAD_WEIGHT);
  require_size(input.dy, rows * hidden, "dy");
  require_size(input.x_or_y, rows * hidden, "x_or_y");
  require_size(input.rstd, rows, "rstd");
  if (layer && !memory_efficient) require_size(input.mean, rows, "mean");
  if (with_gamma) require_size(input.gamma, hidden, "gamma");
  if (!input.d_residual_out.empty())
    require_size(input.d_residual_out, rows * hidden, "d_residual_out");

  NormReferenceBackward out;
  out.dx.resize(rows * hidden);
  out.dx_magnitude.resize(rows * hidden);
  if (with_gamma) {
    out.dgamma.assign(hidden, 0.0);
    out.dgamma_scale.assign(hidden, 0.0);
    if (accumulate) {
      require_size(input.dgamma_initial, hidden, "dgamma_initial");
      for (int64_t j = 0; j < hidden; ++j) {
        out.dgamma[j] = input.dgamma_initial[j];
        out.dgamma_scale[j] = std::fabs(input.dgamma_initial[j]);
      }
    }
  }
  if (with_beta) {
    out.dbeta.assign(hidden, 0.0);
    out.dbeta_scale.assign(hidden, 0.0);
    if (accumulate) {
      require_size(input.dbeta_initial, hidden, "dbeta_initial");
      for (int64_t j = 0; j < hidden; ++j) {
        out.dbeta[j] = input.dbeta_initial[j];
        out.dbeta_scale[j] = std::fabs(input.dbeta_initial[j]);
      }
    }
  }

  std::vector<double> x_hat(hidden), gh(hidden);
  for (int64_t i = 0; i < rows; ++i) {
    const double* dy = input.dy.data() + i * hidden;
    const double* v = input.x_or_y.data() + i * hidden;
    const double rstd = input.rstd[i];
    for (int64_t j = 0; j < hidden; ++j) {
      const double g_eff = gamma_eff(problem, input.gamma, j);
      if (memory_efficient) {
        const double beta = with_beta ? input.beta[j] : 0.0;
        x_hat[j] = (v[j] - beta) / g_eff;  // L2: g_eff == 1
      } else {
        x_hat[j] = (v[j] - (layer ? input.mean[i] : 0.0)) * rstd;
      }
      gh[j] = dy[j] * g_eff;
    }
    double mean_gh = 0, mean_gh_xhat = 0;
    for (int64_t j = 0; j < hidden; ++j) {
      mean_gh += gh[j];
      mean_gh_xhat += gh[j] * x_hat[j];
    }
    mean_gh /= static_cast<double>(hidden);
    mean_gh_xhat /= static_cast<double>(hidden);
    for (int64_t j = 0; j < hidden; ++j) {
      const double centre = layer ? mean_gh : 0.0;
      double dx = rstd * (gh[j] - centre - x_hat[j] * mean_gh_xhat);
      double magnitude = std::fabs(rstd) * (std::fabs(gh[j]) + std::fabs(centre) +
                                            std::fabs(x_hat[j] * mean_gh_xhat));
      if (!input.d_residual_out.empty()) {
        dx += input.d_residual_out[i * hidden + j];
        magnitude += std::fabs(input.d_residual_out[i * hidden + j]);
      }
      out.dx[i * hidden + j] = dx;
      out.dx_magnitude[i * hidden + j] = magnitude;
      if (with_gamma) {
        out.dgamma[j] += dy[j] * x_hat[j];
        out.dgamma_scale[j] += std::fabs(dy[j] * x_hat[j]);
      }
      if (with_beta) {
        out.dbeta[j] += dy[j];
        out.dbeta_scale[j] += std::fabs(dy[j]);
      }
    }
  }
  return out;
}

}  // namespace switchyard::conformance
