#include <cmath>
#include <cstdio>
#include <limits>
#include <switchyard/conformance/compare.hpp>
#include <switchyard/float16.hpp>

namespace switchyard::conformance {
namespace {

bool is_f32(DLDataType t) { return t.code == kDLFloat && t.bits == 32; }
bool is_half_width(DLDataType t) {
  return (t.code == kDLFloat && t.bits == 16) || (t.code == kDLBfloat && t.bits == 16);
}

std::string number(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

}  // namespace

Tolerance statistic_tolerance(DLDataType input_dtype, double max_abs_expected) {
  Tolerance t;
  t.rtol = is_half_width(input_dtype) ? 1e-3 : 1e-5;
  t.atol = t.rtol / 10 * max_abs_expected;
  return t;
}

Tolerance elementwise_tolerance(DLDataType output_dtype, double max_abs_expected) {
  Tolerance t;
  t.dtype = output_dtype;
  t.rtol = 1e-5;
  t.atol = 1e-6 * max_abs_expected;
  if (is_half_width(output_dtype)) t.ulps = 2;
  return t;
}

Tolerance row_sum_tolerance(DLDataType input_dtype) {
  Tolerance t;
  t.rtol = is_half_width(input_dtype) ? 1e-2 : 1e-4;
  return t;
}

double round_to_dtype(double value, DLDataType dtype) {
  if (dtype.code == kDLFloat && dtype.bits == 64) return value;
  // Through float first: a double rounding, but one far below every tolerance used here.
  const float f = static_cast<float>(value);
  if (is_f32(dtype)) return f;
  if (dtype.code == kDLBfloat && dtype.bits == 16) return sy::bf16_to_float(sy::float_to_bf16(f));
  if (dtype.code == kDLFloat && dtype.bits == 16) return sy::f16_to_float(sy::float_to_f16(f));
  return value;
}

double ulp_of(double value, DLDataType dtype) {
  int mantissa_bits = 52, min_exponent = -1022;  // explicit mantissa bits, least normal exponent
  if (is_f32(dtype)) mantissa_bits = 23, min_exponent = -126;
  if (dtype.code == kDLBfloat && dtype.bits == 16) mantissa_bits = 7, min_exponent = -126;
  if (dtype.code == kDLFloat && dtype.bits == 16) mantissa_bits = 10, min_exponent = -14;
  int exponent = min_exponent;
  if (value != 0 && std::isfinite(value)) {
    std::frexp(value, &exponent);  // |value| = m * 2^exponent, m in [0.5, 1)
    exponent -= 1;
    if (exponent < min_exponent) exponent = min_exponent;
  }
  return std::ldexp(1.0, exponent - mantissa_bits);
}

std::optional<Mismatch> find_mismatch(const std::vector<double>& got,
                                      const std::vector<double>& expected,
                                      const Tolerance& tolerance,
                                      const std::vector<double>* scale) {
  Mismatch worst;
  worst.total = static_cast<int64_t>(expected.size());
  double worst_excess = 0;
  for (size_t k = 0; k < expected.size(); ++k) {
    const double g = k < got.size() ? got[k] : std::numeric_limits<double>::quiet_NaN();
    const double base = scale != nullptr ? (*scale)[k] : std::fabs(expected[k]);
    double target = expected[k];
    double allowed = tolerance.rtol * base + tolerance.atol;
    if (tolerance.ulps > 0) {
      target = round_to_dtype(expected[k], tolerance.dtype);
      allowed += tolerance.ulps * ulp_of(target, tolerance.dtype);
    }
    const double diff = std::fabs(g - target);
    const bool ok = !std::isnan(g) && diff <= allowed;
    if (ok) continue;
    ++worst.count;
    const double excess = std::isnan(diff) ? std::numeric_limits<double>::infinity()
                          : allowed > 0    ? diff / allowed
                                           : std::numeric_limits<double>::max();
    if (worst.count == 1 || excess > worst_excess) {
      worst_excess = excess;
      worst.index = static_cast<int64_t>(k);
      worst.got = g;
      worst.expected = expected[k];
      worst.allowed = allowed;
    }
  }
  if (worst.count == 0) return std::nullopt;
  return worst;
}

std::string describe_mismatch(const std::string& tensor, const Mismatch& m, int64_t columns) {
  std::string where = tensor + "[";
  if (columns > 0)
    where += std::to_string(m.index / columns) + "," + std::to_string(m.index % columns);
  else
    where += std::to_string(m.index);
  where += "]";
  std::string text = "worst " + where + " got " + number(m.got) + " expected " + number(m.expected);
  if (std::isnan(m.got))
    text += " (NaN: the poison was never overwritten, or the plugin produced NaN;";
  else
    text += " (|diff| " + number(std::fabs(m.got - m.expected)) + " > allowed " +
            number(m.allowed) + ";";
  text += " " + std::to_string(m.count) + " of " + std::to_string(m.total) + " elements)";
  return text;
}

}  // namespace switchyard::conformance
