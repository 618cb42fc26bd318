// The tolerance rules and the worst-element report.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <switchyard/conformance/compare.hpp>

using namespace switchyard::conformance;

namespace {
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kBF16{kDLBfloat, 16, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};
}  // namespace

TEST_CASE("compare: dtype rounding and ulps") {
  CHECK(round_to_dtype(1.0 + 1.0 / 256, kBF16) == 1.0);  // halfway: to even
  CHECK(round_to_dtype(1.0 + 3.0 / 256, kBF16) == 1.0 + 4.0 / 256);
  CHECK(round_to_dtype(1.0 + 1.0 / 4096, kF16) == 1.0);
  CHECK(ulp_of(1.0, kBF16) == 1.0 / 128);
  CHECK(ulp_of(-3.0, kF16) == 2.0 / 1024);
  CHECK(ulp_of(1.0, kF32) == std::ldexp(1.0, -23));
  CHECK(ulp_of(0.0, kF16) == std::ldexp(1.0, -24));
}

TEST_CASE("compare: the tolerances of docs/semantics.md") {
  CHECK(statistic_tolerance(kF32, 10).rtol == 1e-5);
  CHECK(statistic_tolerance(kBF16, 10).rtol == 1e-3);
  CHECK(elementwise_tolerance(kF32, 2).rtol == 1e-5);
  CHECK(elementwise_tolerance(kF32, 2).atol == doctest::Approx(2e-6));
  CHECK(elementwise_tolerance(kBF16, 2).ulps == 2);
  CHECK(row_sum_tolerance(kF16).rtol == 1e-2);
}

TEST_CASE("compare: finds the worst element and says where") {
  const Tolerance t = elementwise_tolerance(kF32, 1);
  CHECK_FALSE(find_mismatch({1.0, 0.5}, {1.0, 0.500001}, t));
  const auto m = find_mismatch({1.0, 0.6, 0.5, 0.4}, {1.0, 0.5, 0.5, 0.5}, t);
  REQUIRE(m);
  CHECK(m->count == 2);
  CHECK(m->total == 4);
  CHECK((m->index == 1 || m->index == 3));
  const std::string text = describe_mismatch("grad", *m, 2);
  CHECK(text.find("grad[") != std::string::npos);
  CHECK(text.find("2 of 4 elements") != std::string::npos);
}

TEST_CASE("compare: NaN (an unwritten output) never passes and is named as poison") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto m = find_mismatch({1.0, nan}, {1.0, 2.0}, statistic_tolerance(kF32, 2));
  REQUIRE(m);
  CHECK(m->index == 1);
  CHECK(describe_mismatch("loss", *m).find("poison") != std::string::npos);
}

TEST_CASE("compare: 16-bit outputs are judged in ulps of the rounded reference") {
  const Tolerance t = elementwise_tolerance(kBF16, 0);
  const double x = 1.0 + 1.0 / 128;                     // representable in bf16
  CHECK_FALSE(find_mismatch({x + 2.0 / 128}, {x}, t));  // 2 ulp
  CHECK(find_mismatch({x + 3.0 / 128}, {x}, t));        // 3 ulp
}

TEST_CASE("compare: a per-element scale replaces |expected|") {
  Tolerance t;
  t.rtol = 1e-3;
  const std::vector<double> scale{100.0};
  CHECK(find_mismatch({0.05}, {0.0}, t));
  CHECK_FALSE(find_mismatch({0.05}, {0.0}, t, &scale));
}
