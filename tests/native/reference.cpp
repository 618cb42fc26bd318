#include "reference.hpp"

#include <cmath>

namespace native_test {

CeReference ce_reference(const CeReferenceInput& in) {
  CeReference out;
  const int64_t v = in.vocab;
  const double vocab = static_cast<double>(v);
  double s = 0;
  if (in.alpha != 0)
    s = in.smoothing == SY_SMOOTHING_PYTORCH ? in.alpha : (v > 1 ? in.alpha * vocab / (vocab - 1) : 0);
  out.grad.assign(static_cast<size_t>(in.rows * v), 0.0);
  for (int64_t i = 0; i < in.rows; ++i) {
    const double* z = &in.logits[static_cast<size_t>(i * v)];
    double m = z[0];
    int64_t arg = 0;
    for (int64_t j = 1; j < v; ++j)
      if (z[j] > m) {
        m = z[j];
        arg = j;
      }
    double sum = 0, sum_z = 0;
    for (int64_t j = 0; j < v; ++j) {
      sum += std::exp(z[j] - m);
      sum_z += z[j];
    }
    const double lse = m + std::log(sum);
    const int64_t t = in.labels[static_cast<size_t>(i)];
    const bool ignored = in.ignore && t == in.ignore_index;
    const bool owned = t >= 0 && t < v;
    const double z_t = owned ? z[t] : m;
    out.lse.push_back(lse);
    out.argmax.push_back(arg);
    out.loss.push_back(ignored ? 0.0 : (1 - s) * (lse - z_t) + s * (lse - sum_z / vocab));
    if (ignored) continue;
    const double g = in.g.empty() ? 1.0 : in.g[static_cast<size_t>(i)];
    for (int64_t j = 0; j < v; ++j) {
      const double q = s / vocab + (owned && j == t ? 1 - s : 0.0);
      out.grad[static_cast<size_t>(i * v + j)] = g * (std::exp(z[j] - lse) - q);
    }
  }
  return out;
}

NormReference norm_reference(const NormReferenceInput& in) {
  NormReference out;
  const int64_t hidden = in.hidden;
  const double count = static_cast<double>(hidden);
  out.dgamma.assign(static_cast<size_t>(hidden), 0.0);
  out.dbeta.assign(static_cast<size_t>(hidden), 0.0);
  for (int64_t i = 0; i < in.rows; ++i) {
    const double* h = &in.h[static_cast<size_t>(i * hidden)];
    double mean = 0;
    if (in.kind == SY_NORM_LAYER) {
      for (int64_t j = 0; j < hidden; ++j) mean += h[j];
      mean /= count;
    }
    double var = 0;
    for (int64_t j = 0; j < hidden; ++j) var += (h[j] - mean) * (h[j] - mean);
    var /= count;
    const double rstd = 1 / std::sqrt(var + in.eps);
    out.mean.push_back(mean);
    out.rstd.push_back(rstd);
    std::vector<double> xhat(static_cast<size_t>(hidden));
    for (int64_t j = 0; j < hidden; ++j) {
      xhat[static_cast<size_t>(j)] = (h[j] - mean) * rstd;
      double y = xhat[static_cast<size_t>(j)];
      if (!in.gamma.empty()) y *= in.gamma[static_cast<size_t>(j)];
      if (!in.beta.empty()) y += in.beta[static_cast<size_t>(j)];
      out.y.push_back(y);
    }
    if (in.dy.empty()) continue;
    const double* dy = &in.dy[static_cast<size_t>(i * hidden)];
    std::vector<double> gh(static_cast<size_t>(hidden));
    double mean_gh = 0, mean_gh_xhat = 0;
    for (int64_t j = 0; j < hidden; ++j) {
      gh[static_cast<size_t>(j)] = dy[j] * (in.gamma.empty() ? 1.0 : in.gamma[static_cast<size_t>(j)]);
      mean_gh += gh[static_cast<size_t>(j)] / count;
      mean_gh_xhat += gh[static_cast<size_t>(j)] * xhat[static_cast<size_t>(j)] / count;
      out.dgamma[static_cast<size_t>(j)] += dy[j] * xhat[static_cast<size_t>(j)];
      out.dbeta[static_cast<size_t>(j)] += dy[j];
    }
    for (int64_t j = 0; j < hidden; ++j) {
      const double centred = in.kind == SY_NORM_LAYER ? mean_gh : 0.0;
      out.dx.push_back(rstd * (gh[static_cast<size_t>(j)] - centred - xhat[static_cast<size_t>(j)] * mean_gh_xhat));
    }
  }
  return out;
}

}  // namespace native_test
