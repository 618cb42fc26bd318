// bfloat16 and IEEE half <-> float conversions on the host, round-to-nearest-even, NaN kept.
// Header-only C++17; used by plugins, the core's thread group and the conformance suite so
// that every CPU path rounds the same way.
#ifndef SWITCHYARD_FLOAT16_HPP
#define SWITCHYARD_FLOAT16_HPP

#include <cstdint>
#include <cstring>

namespace sy {

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bf16_to_float(uint16_t h) { return bits_to_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN, sign kept
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return bits_to_float(sign);
    // Subnormal half: normalise into a float.
    exponent = 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3ffu;
  }
  return bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t float_to_f16(float f) {
  const uint32_t u = float_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): count units of 2^-24, rounding once to nearest even.
    const uint32_t shift = 126u - (abs >> 23);  // >= 14
    if (shift > 25u) return sign;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t halfway = 1u << (shift - 1u);
    uint32_t value = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    if (rest > halfway || (rest == halfway && (value & 1u))) ++value;
    return static_cast<uint16_t>(sign | value);
  }
  uint32_t value = abs - 0x38000000u;  // re-bias exponent 127 -> 15
  value += 0xfffu + ((value >> 13) & 1u);
  return static_cast<uint16_t>(sign | (value >> 13));
}

}  // namespace sy

#endif  // SWITCHYARD_FLOAT16_HPP
