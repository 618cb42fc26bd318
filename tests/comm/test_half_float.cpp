// The 16-bit float conversions the thread group reduces with (the SDK's switchyard/float16.hpp),
// against independent references.
#include <doctest/doctest.h>

#include <switchyard/float16.hpp>

#include "comm_test_support.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

using namespace comm_test;
using sy::bf16_to_float;
using sy::f16_to_float;
using sy::float_to_bf16;
using sy::float_to_f16;

namespace {

float from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Every 4099th float32 bit pattern (about a million, all binades, both signs).
template <class Check>
void for_sampled_floats(Check check) {
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 4099) check(from_bits(static_cast<uint32_t>(bits)));
}

}  // namespace

TEST_CASE("float16 -> float32 is exact for every one of the 65536 encodings") {
  int mismatches = 0;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    if (!same_float(f16_to_float(static_cast<uint16_t>(h)),
                    reference_f16_to_float(static_cast<uint16_t>(h)))) {
      if (++mismatches < 5) FAIL_CHECK("half " << h);
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("bfloat16 -> float32 -> bfloat16 round-trips every non-NaN encoding") {
  int mismatches = 0;
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float value = bf16_to_float(bits);
    if (std::isnan(value)) continue;
    if (float_to_bf16(value) != bits || !same_float(value, reference_bf16_to_float(bits))) {
      ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("float32 -> float16 rounds to nearest even, like the reference") {
  int mismatches = 0;
  for_sampled_floats([&](float value) {
    const uint16_t got = float_to_f16(value);
    if (std::isnan(value)) {
      if (!std::isnan(f16_to_float(got))) ++mismatches;
      return;
    }
    if (got != reference_float_to_f16(value) && ++mismatches < 5) {
      FAIL_CHECK("float " << value << " -> " << int{got} << " expected "
                          << int{reference_float_to_f16(value)});
    }
  });
  CHECK(mismatches == 0);
}

TEST_CASE("float32 -> float16 edge cases") {
  CHECK(float_to_f16(65504.0f) == 0x7bffu);                  // largest half
  CHECK(float_to_f16(65519.996f) == 0x7bffu);                // just below the halfway point
  CHECK(float_to_f16(65520.0f) == 0x7c00u);                  // halfway: ties to even = inf
  CHECK(float_to_f16(std::ldexp(1.0f, -24)) == 0x0001u);     // smallest subnormal
  CHECK(float_to_f16(std::ldexp(1.0f, -25)) == 0x0000u);     // half of it: ties to even = 0
  CHECK(float_to_f16(std::ldexp(3.0f, -26)) == 0x0001u);     // 0.75 of it: rounds up
  CHECK(float_to_f16(std::ldexp(3.0f, -25)) == 0x0002u);     // 1.5 of it: tie to even = 2
  CHECK(float_to_f16(std::ldexp(1023.5f, -24)) == 0x0400u);  // rounds up into the normals
  CHECK(float_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00u);  // tie, even stays 1.0
  CHECK(float_to_f16(1.0f + std::ldexp(3.0f, -11)) == 0x3c02u);  // tie, rounds to even
  CHECK(float_to_f16(-0.0f) == 0x8000u);
  CHECK(float_to_f16(-std::numeric_limits<float>::infinity()) == 0xfc00u);
  CHECK(std::isnan(f16_to_float(float_to_f16(std::nanf("")))));
#if defined(__FLT16_MAX__)
  // The compiler's own conversion (software, round-to-nearest-even) as a second opinion.
  int mismatches = 0;
  for_sampled_floats([&](float value) {
    if (std::isnan(value)) return;
    const _Float16 compiler = static_cast<_Float16>(value);
    uint16_t bits;
    std::memcpy(&bits, &compiler, sizeof bits);
    if (bits != float_to_f16(value)) ++mismatches;
  });
  CHECK(mismatches == 0);
#endif
}

TEST_CASE("float32 -> bfloat16 rounds to nearest even, like the reference") {
  int mismatches = 0;
  for_sampled_floats([&](float value) {
    const uint16_t got = float_to_bf16(value);
    if (std::isnan(value)) {
      if (!std::isnan(bf16_to_float(got))) ++mismatches;
      return;
    }
    if (got != reference_float_to_bf16(value) && ++mismatches < 5) {
      FAIL_CHECK("float " << value << " -> " << int{got} << " expected "
                          << int{reference_float_to_bf16(value)});
    }
  });
  CHECK(mismatches == 0);
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80u);  // tie: stays even
  CHECK(float_to_bf16(1.0f + std::ldexp(3.0f, -8)) == 0x3f82u);  // tie: rounds up to even
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80u);  // rounds to inf
  // A NaN whose payload sits only in the low bits must stay NaN, not become infinity.
  CHECK(std::isnan(bf16_to_float(float_to_bf16(from_bits(0x7f800001u)))));
}
