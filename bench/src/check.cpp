#include "check.hpp"

#include "dtype.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

namespace switchyard::bench {
namespace {

std::string tolerance_text(const conformance::Tolerance& t) {
  char buffer[160];
  if (t.ulps > 0)
    std::snprintf(buffer, sizeof buffer, "%d ulp of the %s-rounded reference + %.3g", t.ulps,
                  dtype_label(t.dtype).c_str(), t.atol);
  else
    std::snprintf(buffer, sizeof buffer, "rtol %.3g + atol %.3g", t.rtol, t.atol);
  return buffer;
}

}  // namespace

double max_abs(const std::vector<double>& values) {
  double m = 0;
  for (double v : values) m = std::fmax(m, std::fabs(v));
  return m;
}

OutputCheck check_output(const std::string& tensor, const std::vector<double>& got,
                         const std::vector<double>& expected,
                         const conformance::Tolerance& tolerance, int64_t columns,
                         const std::vector<double>* scale) {
  OutputCheck out;
  out.tensor = tensor;
  out.tolerance = tolerance_text(tolerance);
  double diff2 = 0, ref2 = 0;
  bool nan = got.size() != expected.size();
  for (size_t k = 0; k < expected.size() && k < got.size(); ++k) {
    if (std::isnan(got[k])) nan = true;
    diff2 += (got[k] - expected[k]) * (got[k] - expected[k]);
    ref2 += expected[k] * expected[k];
  }
  if (nan)
    out.rel_error = std::numeric_limits<double>::infinity();
  else
    out.rel_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  const auto mismatch = conformance::find_mismatch(got, expected, tolerance, scale);
  out.passed = !mismatch.has_value() && !nan;
  if (mismatch) out.worst = conformance::describe_mismatch(tensor, *mismatch, columns);
  else if (nan) out.worst = tensor + ": " + std::to_string(got.size()) + " values read back, " +
                            std::to_string(expected.size()) + " expected";
  return out;
}

}  // namespace switchyard::bench
