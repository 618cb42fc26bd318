// Welford's running statistics and Chan's parallel merge, in fp32 (Apex's cuWelfordOnlineSum /
// cuChanOnlineSum). Host and device compile the same code; the CPU tests check it against
// float64.
#ifndef SWITCHYARD_APEX_WELFORD_HPP
#define SWITCHYARD_APEX_WELFORD_HPP

#include "kernel_types.hpp"

#include <cmath>

namespace switchyard::apex {

// count values with mean `mean` and Σ(x − mean)² = m2.
struct WelfordStats {
  float count;
  float mean;
  float m2;
};

SY_APEX_HD WelfordStats welford_empty() { return WelfordStats{0.0f, 0.0f, 0.0f}; }

// Adds one value (the count is a float: exact up to 2^24 values per thread).
SY_APEX_HD void welford_add(WelfordStats& s, float x) {
  s.count += 1.0f;
  const float delta = x - s.mean;
  s.mean += delta / s.count;
  s.m2 += delta * (x - s.mean);
}

// Chan et al.: the statistics of a ∪ b. Not symmetric in floating point, so every caller
// passes the lower-indexed part as `a`; both threads of a shuffle pair then compute the same
// bits.
SY_APEX_HD WelfordStats welford_merge(const WelfordStats& a, const WelfordStats& b) {
  if (b.count == 0.0f) return a;
  if (a.count == 0.0f) return b;
  const float count = a.count + b.count;
  const float b_share = b.count / count;
  const float delta = b.mean - a.mean;
  WelfordStats r;
  r.count = count;
  r.mean = a.mean + delta * b_share;
  r.m2 = a.m2 + b.m2 + delta * delta * a.count * b_share;
  return r;
}

// 1/√(variance + eps), both roundings IEEE (sqrtf and the division are correctly rounded
// unless the build asks for fast math, which this one does not).
SY_APEX_HD float rstd_of(float variance, float eps) { return 1.0f / sqrtf(variance + eps); }

}  // namespace switchyard::apex

#endif
