#include "comm_test_support.hpp"

#include <cmath>
#include <cstring>

namespace comm_test {

sy_error fresh_error() {
  sy_error err{};
  err.struct_size = sizeof(sy_error);
  err.status = -1;
  std::strcpy(err.message, "<untouched>");
  return err;
}

Outcome outcome(sy_status status, const sy_error& err) {
  Outcome result;
  result.status = status;
  result.message = err.message;
  return result;
}

std::vector<float> random_floats(std::mt19937_64& rng, size_t count) {
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-6, 6);
  std::vector<float> values(count);
  for (float& v : values) v = std::ldexp(mantissa(rng), exponent(rng));
  return values;
}

std::vector<double> random_doubles(std::mt19937_64& rng, size_t count) {
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::vector<double> values(count);
  for (double& v : values) v = std::ldexp(mantissa(rng), exponent(rng));
  return values;
}

std::vector<int64_t> random_ints(std::mt19937_64& rng, size_t count, int64_t magnitude) {
  std::uniform_int_distribution<int64_t> value(-magnitude, magnitude);
  std::vector<int64_t> values(count);
  for (int64_t& v : values) v = value(rng);
  return values;
}

float reference_bf16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

namespace {

// Picks between the two 16-bit neighbours of `value` (lower magnitude first), in double.
template <class ToFloat>
uint16_t nearest(double value, uint16_t low, uint16_t high, ToFloat to_float) {
  const double below = std::fabs(value - static_cast<double>(to_float(low)));
  const double above = std::fabs(static_cast<double>(to_float(high)) - value);
  if (below < above) return low;
  if (above < below) return high;
  return (low & 1u) == 0 ? low : high;
}

}  // namespace

uint16_t reference_float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const auto truncated = static_cast<uint16_t>(bits >> 16);
  if ((bits & 0xffffu) == 0) return truncated;
  // The next bf16 away from zero; past the largest finite value it is infinity, which the
  // candidate comparison cannot express, so handle the overflow boundary explicitly.
  const auto next = static_cast<uint16_t>(truncated + 1);
  if ((next & 0x7fffu) == 0x7f80u) {
    // Halfway between the largest finite bf16 and 2^128 rounds up to infinity (ties to even).
    const double largest = std::fabs(static_cast<double>(reference_bf16_to_float(truncated)));
    const double halfway = largest + std::ldexp(1.0, 127 - 8);
    return std::fabs(static_cast<double>(value)) >= halfway ? next : truncated;
  }
  return nearest(std::fabs(static_cast<double>(value)), static_cast<uint16_t>(truncated & 0x7fffu),
                 static_cast<uint16_t>(next & 0x7fffu), reference_bf16_to_float) |
         static_cast<uint16_t>(truncated & 0x8000u);
}

float reference_f16_to_float(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
  if (exponent == 0x1f) {
    return mantissa == 0 ? static_cast<float>(sign * INFINITY) : std::nanf("");
  }
  if (exponent == 0) return static_cast<float>(sign * std::ldexp(mantissa, -24));
  return static_cast<float>(sign * std::ldexp(1024 + mantissa, exponent - 25));
}

uint16_t reference_float_to_f16(float value) {
  if (std::isnan(value)) return 0x7e00u;
  const uint16_t sign = std::signbit(value) ? 0x8000u : 0u;
  const double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude >= 65520.0) return sign | 0x7c00u;  // halfway to 2^16 and above: infinity
  // Walk to the largest half magnitude <= value by binary search over the ordered encodings.
  uint16_t low = 0, high = 0x7bffu;
  while (low < high) {
    const auto middle = static_cast<uint16_t>((low + high + 1) / 2);
    if (static_cast<double>(reference_f16_to_float(middle)) <= magnitude) low = middle;
    else high = static_cast<uint16_t>(middle - 1);
  }
  if (static_cast<double>(reference_f16_to_float(low)) == magnitude || low == 0x7bffu) {
    return sign | low;
  }
  return sign | nearest(magnitude, low, static_cast<uint16_t>(low + 1), reference_f16_to_float);
}

}  // namespace comm_test
