// White-box: the plugin's stores round a double to bfloat16/float16 exactly once (round to odd
// into float, then to nearest even), which plain double -> float -> half conversion does not.
#include "row_io.hpp"

#include "native_support.hpp"

#include <switchyard/float16.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <ios>
#include <string>
#include <limits>

using namespace native_test;
using switchyard::native::DataType;

namespace {

double half_value(DataType type, uint16_t bits) {
  return type == DataType::BF16 ? sy::bf16_to_float(bits) : sy::f16_to_float(bits);
}

int64_t ordered(uint16_t b) { return (b & 0x8000u) ? -static_cast<int64_t>(b & 0x7fffu) : b; }
uint16_t from_ordered(int64_t k) {
  return k < 0 ? static_cast<uint16_t>(0x8000u | static_cast<uint16_t>(-k)) : static_cast<uint16_t>(k);
}

// The correctly rounded (nearest, ties to even) 16-bit pattern of a finite double, by looking
// at the neighbours of a first guess and comparing exact distances.
uint16_t correctly_rounded(DataType type, double d) {
  const float f = static_cast<float>(d);
  const uint16_t guess = type == DataType::BF16 ? sy::float_to_bf16(f) : sy::float_to_f16(f);
  uint16_t best = guess;
  double best_distance = INFINITY;
  for (int64_t k = ordered(guess) - 2; k <= ordered(guess) + 2; ++k) {
    const uint16_t candidate = from_ordered(k);
    const double v = half_value(type, candidate);
    if (!std::isfinite(v)) continue;
    const double distance = std::fabs(d - v);
    if (distance < best_distance || (distance == best_distance && (candidate & 1u) == 0)) {
      best = candidate;
      best_distance = distance;
    }
  }
  if ((best & 0x7fffu) == 0 && std::signbit(d)) best = 0x8000u;  // -0 for tiny negatives
  return best;
}

uint16_t stored(DataType type, double d) {
  uint16_t out = 0;
  switchyard::native::store_row(type, &out, 1, &d);
  return out;
}

}  // namespace

TEST_CASE("stores round once: values just beside a half-type tie") {
  // 1 + 2^-8 is halfway between two bfloat16 values; a hair above must round up, a hair
  // below down. Through float, the hair is lost and the tie goes to even (down).
  const double hair = std::ldexp(1.0, -40);
  CHECK(stored(DataType::BF16, 1.0 + std::ldexp(1.0, -8) + hair) == sy::float_to_bf16(1.0f + 0.0078125f));
  CHECK(stored(DataType::BF16, 1.0 + std::ldexp(1.0, -8) - hair) == sy::float_to_bf16(1.0f));
  CHECK(stored(DataType::BF16, 1.0 + std::ldexp(1.0, -8)) == sy::float_to_bf16(1.0f));  // tie: even
  CHECK(stored(DataType::F16, 1.0 + std::ldexp(1.0, -11) + hair) == sy::float_to_f16(1.0f + std::ldexp(1.0f, -10)));
  CHECK(stored(DataType::F16, -(1.0 + std::ldexp(1.0, -11) + hair)) == sy::float_to_f16(-(1.0f + std::ldexp(1.0f, -10))));
  // float16 subnormal: 2^-25 is halfway between 0 and the smallest subnormal 2^-24.
  CHECK(stored(DataType::F16, std::ldexp(1.0, -25) + std::ldexp(1.0, -60)) == 0x0001);
  CHECK(stored(DataType::F16, std::ldexp(1.0, -25)) == 0x0000);
}

TEST_CASE("stores agree with a brute-force correctly rounded reference") {
  Random random(12345);
  for (DataType type : {DataType::BF16, DataType::F16}) {
    int64_t mismatches = 0;
    for (int k = 0; k < 200000; ++k) {
      // Random magnitudes across the range, and values within a few float ulps of ties.
      const int exponent = static_cast<int>(random.integer(type == DataType::F16 ? -26 : -120, 15));
      double d = std::ldexp(random.uniform(1.0, 2.0), exponent) * (random.next() & 1 ? 1 : -1);
      if (k % 2 == 0) {
        const uint16_t near = stored(type, d);
        const double a = half_value(type, near);
        const double b = half_value(type, from_ordered(ordered(near) + 1));
        if (std::isfinite(b)) d = (a + b) / 2 + (static_cast<double>(random.integer(-3, 4)) * std::ldexp(std::fabs(a), -40));
      }
      if (stored(type, d) != correctly_rounded(type, d)) {
        if (mismatches == 0)
          MESSAGE("first mismatch: " << std::hexfloat << d << " stored " << std::hex
                                     << stored(type, d) << " expected " << correctly_rounded(type, d));
        ++mismatches;
      }
    }
    CAPTURE(std::string(type == DataType::BF16 ? "bfloat16" : "float16"));
    CHECK(mismatches == 0);
  }
}

TEST_CASE("round_to_odd keeps exact values and marks inexact ones with an odd last bit") {
  CHECK(switchyard::native::round_to_odd(1.5) == 1.5f);
  const float up = switchyard::native::round_to_odd(1.0 + std::ldexp(1.0, -30));
  CHECK(sy::float_to_bits(up) == (sy::float_to_bits(1.0f) | 1u));
  const float down = switchyard::native::round_to_odd(-(1.0 + std::ldexp(1.0, -30)));
  CHECK(sy::float_to_bits(down) == (sy::float_to_bits(-1.0f) | 1u));
  CHECK(std::isinf(switchyard::native::round_to_odd(INFINITY)));
  CHECK(std::isnan(switchyard::native::round_to_odd(NAN)));
  CHECK(switchyard::native::round_to_odd(1e300) == std::numeric_limits<float>::max());
}
