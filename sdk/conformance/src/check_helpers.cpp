#include "check_helpers.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace switchyard::conformance {

std::string rank_prefix(size_t ranks, size_t rank) {
  return ranks > 1 ? "rank" + std::to_string(rank) + " " : "";
}

double max_abs(const std::vector<double>& values) {
  double m = 0;
  for (double x : values) m = std::fmax(m, std::fabs(x));
  return m;
}

std::vector<double> rounded(const std::vector<double>& values, DLDataType dtype) {
  std::vector<double> out(values.size());
  for (size_t k = 0; k < values.size(); ++k) out[k] = round_to_dtype(values[k], dtype);
  return out;
}

std::string format_number(double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

void compare_values(Failures& failures, const std::string& name, const std::vector<double>& got,
                    const std::vector<double>& expected, const Tolerance& tolerance,
                    int64_t columns, const std::vector<double>* scale) {
  if (auto m = find_mismatch(got, expected, tolerance, scale))
    failures.add(describe_mismatch(name, *m, columns));
}

std::optional<int64_t> first_bit_difference(const std::vector<double>& a,
                                            const std::vector<double>& b) {
  for (size_t k = 0; k < a.size() && k < b.size(); ++k)
    if (std::memcmp(&a[k], &b[k], sizeof(double)) != 0) return static_cast<int64_t>(k);
  if (a.size() != b.size()) return static_cast<int64_t>(std::min(a.size(), b.size()));
  return std::nullopt;
}

void compare_bits(Failures& failures, const std::string& what, const std::vector<double>& a,
                  int64_t row, const std::vector<double>& b, int64_t count, int64_t width) {
  if (a.empty() && b.empty()) return;
  if (static_cast<int64_t>(a.size()) < (row + count) * width) {
    failures.add(what + ": " + std::to_string(a.size()) + " values, expected at least " +
                 std::to_string((row + count) * width));
    return;
  }
  const std::vector<double> slice(a.begin() + row * width, a.begin() + (row + count) * width);
  if (auto k = first_bit_difference(slice, b)) {
    const int64_t i = row + *k / width;
    const std::string index =
        width > 1 ? std::to_string(i) + "," + std::to_string(*k % width) : std::to_string(i);
    const std::string left =
        *k < static_cast<int64_t>(slice.size()) ? format_number(slice[*k]) : "(none)";
    const std::string right = *k < static_cast<int64_t>(b.size()) ? format_number(b[*k]) : "(none)";
    failures.add(what + ": [" + index + "] " + left + " vs " + right);
  }
}

}  // namespace switchyard::conformance
