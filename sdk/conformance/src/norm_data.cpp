#include "norm_data.hpp"

#include <switchyard/conformance/compare.hpp>

#include "check_helpers.hpp"
#include "random_data.hpp"

namespace switchyard::conformance {
namespace {

std::vector<double> random_values(Random& random, int64_t count, double offset, double low,
                                  double high, DLDataType dtype) {
  std::vector<double> v(static_cast<size_t>(count));
  for (auto& value : v) value = round_to_dtype(offset + random.nonzero(low, high), dtype);
  return v;
}

}  // namespace

NormData make_norm_data(const NormSpec& spec) {
  Random random(spec.seed);
  NormData d;
  d.rows = spec.rows;
  d.hidden = spec.hidden;
  const int64_t h = spec.hidden;
  for (int64_t i = 0; i < d.rows; ++i) {
    // Every third row has a large mean: LayerNorm must subtract it before squaring.
    const auto row = random_values(random, h, i % 3 == 2 ? 3.0 : 0.0, 0.05, 2.0, spec.x_dtype);
    d.x.insert(d.x.end(), row.begin(), row.end());
  }
  if (has_flag(spec.flags, SY_NORM_RESIDUAL)) {
    d.residual = random_values(random, d.rows * h, 0, 0.05, 1.0, spec.x_dtype);
    d.d_residual_out = random_values(random, d.rows * h, 0, 0.05, 1.0, spec.x_dtype);
  }
  if (with_gamma(spec)) {
    const bool zero_centered = has_flag(spec.flags, SY_NORM_ZERO_CENTERED_GAMMA);
    d.gamma = random_values(random, h, zero_centered ? 0.0 : 1.0, 0.05, 0.5, spec.weight_dtype);
  }
  if (with_beta(spec)) d.beta = random_values(random, h, 0, 0.05, 0.5, spec.weight_dtype);
  d.dy = random_values(random, d.rows * h, 0, 0.05, 1.0, spec.y_dtype);
  if (has_flag(spec.flags, SY_NORM_ACCUMULATE_GRAD_WEIGHT)) {
    d.dgamma_initial = random_values(random, h, 0, 0.05, 2.0, spec.grad_weight_dtype);
    d.dbeta_initial = random_values(random, h, 0, 0.05, 2.0, spec.grad_weight_dtype);
  }
  return d;
}

NormData norm_data_rows(const NormData& d, int64_t begin, int64_t end) {
  NormData s = d;
  s.rows = end - begin;
  auto rows = [&](const std::vector<double>& v) {
    if (v.empty()) return v;
    return std::vector<double>(v.begin() + begin * d.hidden, v.begin() + end * d.hidden);
  };
  s.x = rows(d.x);
  s.residual = rows(d.residual);
  s.dy = rows(d.dy);
  s.d_residual_out = rows(d.d_residual_out);
  return s;
}

NormReferenceProblem norm_reference_problem(const NormSpec& spec, int64_t rows) {
  NormReferenceProblem p;
  p.kind = spec.kind;
  p.rows = rows;
  p.hidden = spec.hidden;
  p.eps = static_cast<double>(spec.eps);  // the float the plugin sees
  p.flags = spec.flags;
  return p;
}

}  // namespace switchyard::conformance
