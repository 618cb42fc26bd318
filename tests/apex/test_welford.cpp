// Welford's update and Chan's merge (welford.hpp) against float64, and the reduction order
// the kernels use (emulator.hpp mirrors it).
#include "emulator.hpp"
#include "welford.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace ap = switchyard::apex;

namespace {

struct Exact {
  double mean = 0, m2 = 0;
};

Exact exact(const std::vector<float>& v) {
  Exact e;
  for (float x : v) e.mean += x;
  e.mean /= static_cast<double>(v.size());
  for (float x : v) e.m2 += (x - e.mean) * (x - e.mean);
  return e;
}

std::vector<float> data(size_t n, double offset, double spread, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(offset + spread * (static_cast<double>(s >> 11) / 9007199254740992.0 - 0.5));
  }
  return v;
}

ap::WelfordStats sequential(const std::vector<float>& v, size_t begin, size_t end) {
  ap::WelfordStats s = ap::welford_empty();
  for (size_t i = begin; i < end; ++i) ap::welford_add(s, v[i]);
  return s;
}

}  // namespace

TEST_CASE("welford_add matches float64 even far from zero") {
  for (double offset : {0.0, 1.0, 1000.0}) {
    CAPTURE(offset);
    const std::vector<float> v = data(4096, offset, 2.0, 7);
    const ap::WelfordStats s = sequential(v, 0, v.size());
    const Exact e = exact(v);
    CHECK(s.count == 4096.0f);
    CHECK(std::fabs(s.mean - e.mean) <= 1e-6 * std::fabs(e.mean) + 1e-6);
    CHECK(std::fabs(s.m2 - e.m2) <= 1e-4 * e.m2);
  }
}

TEST_CASE("Chan's merge: exact with an empty side, accurate otherwise") {
  const std::vector<float> v = data(1000, 50.0, 4.0, 3);
  const ap::WelfordStats a = sequential(v, 0, 300);
  const ap::WelfordStats b = sequential(v, 300, 1000);
  const ap::WelfordStats none = ap::welford_empty();
  const ap::WelfordStats left = ap::welford_merge(a, none);
  const ap::WelfordStats right = ap::welford_merge(none, a);
  CHECK(std::memcmp(&left, &a, sizeof a) == 0);
  CHECK(std::memcmp(&right, &a, sizeof a) == 0);
  const ap::WelfordStats m = ap::welford_merge(a, b);
  const Exact e = exact(v);
  CHECK(m.count == 1000.0f);
  CHECK(std::fabs(m.mean - e.mean) <= 1e-6 * std::fabs(e.mean));
  CHECK(std::fabs(m.m2 - e.m2) <= 1e-4 * e.m2);
}

TEST_CASE("the kernels' reduction: every lane agrees, the result matches float64") {
  for (size_t threads : {32u, 64u, 96u, 1024u}) {
    CAPTURE(threads);
    const std::vector<float> v = data(threads * 13, 3.0, 6.0, threads);
    std::vector<ap::WelfordStats> parts(threads);
    std::vector<std::pair<float, float>> sums(threads);
    for (size_t t = 0; t < threads; ++t) {
      // Thread t: elements t, t + threads, … (as chunks are dealt), some threads empty.
      std::vector<float> mine;
      for (size_t i = t; i < v.size(); i += threads)
        if (t % 5 != 4) mine.push_back(v[i]);
      parts[t] = sequential(mine, 0, mine.size());
      float s = 0;
      for (float x : mine) s += x * x;
      sums[t] = {s, static_cast<float>(mine.size())};
    }
    std::vector<float> kept;
    for (size_t i = 0; i < v.size(); ++i)
      if ((i % threads) % 5 != 4) kept.push_back(v[i]);
    const ap::WelfordStats r = apex_test::reduce_welford(parts);
    const Exact e = exact(kept);
    CHECK(r.count == static_cast<float>(kept.size()));
    CHECK(std::fabs(r.mean - e.mean) <= 1e-6 * std::fabs(e.mean));
    CHECK(std::fabs(r.m2 - e.m2) <= 1e-4 * e.m2);
    double squares = 0;
    for (float x : kept) squares += static_cast<double>(x) * x;
    const std::pair<float, float> total = apex_test::reduce_sums(sums);
    CHECK(std::fabs(total.first - squares) <= 1e-5 * squares);
    CHECK(total.second == static_cast<float>(kept.size()));
  }
  CHECK(apex_test::lane_disagreements() == 0);
}

TEST_CASE("rstd: IEEE square root and division") {
  CHECK(ap::rstd_of(3.0f, 1.0f) == 0.5f);
  CHECK(ap::rstd_of(0.0f, 1e-5f) == 1.0f / std::sqrt(1e-5f));
}
