// Order statistics of repetition times.
#ifndef SWITCHYARD_BENCH_STATS_HPP
#define SWITCHYARD_BENCH_STATS_HPP

#include <algorithm>
#include <limits>
#include <vector>

namespace switchyard::bench {

// The median (mean of the two middle values for an even count); NaN when empty.
inline double median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

inline double min_of(const std::vector<double>& values) {
  return values.empty() ? std::numeric_limits<double>::quiet_NaN()
                        : *std::min_element(values.begin(), values.end());
}

inline double max_of(const std::vector<double>& values) {
  return values.empty() ? std::numeric_limits<double>::quiet_NaN()
                        : *std::max_element(values.begin(), values.end());
}

}  // namespace switchyard::bench

#endif
