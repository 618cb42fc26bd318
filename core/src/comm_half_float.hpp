// bfloat16 and IEEE float16 <-> float32, bit-exact, on any CPU. The thread group reduces 16-bit
// data in float32 and rounds back once, round-to-nearest-even, as NCCL does on the GPU.
#ifndef SWITCHYARD_CORE_COMM_HALF_FLOAT_HPP
#define SWITCHYARD_CORE_COMM_HALF_FLOAT_HPP

#include <cstdint>
#include <cstring>

namespace switchyard::detail {

inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// ---- bfloat16: the top half of a float32 ----------------------------------------------------

inline float bf16_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

inline uint16_t float_to_bf16(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    // NaN: keep the sign, force a quiet payload so truncation cannot turn it into infinity.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit. Overflow carries
  // into the exponent and correctly produces infinity.
  const uint32_t lowest_kept = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + lowest_kept) >> 16);
}

// ---- IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits ---------------------------

inline float f16_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1fu) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_float(sign);  // signed zero
  // Subnormal half: normalise it; every half subnormal is a float32 normal.
  int32_t shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  mantissa &= 0x3ffu;
  const uint32_t float_exponent = static_cast<uint32_t>(113 - shift);
  return bits_float(sign | (float_exponent << 23) | (mantissa << 13));
}

inline uint16_t float_to_f16(float value) {
  const uint32_t bits = float_bits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;

  if (magnitude >= 0x7f800000u) {  // inf or NaN
    if (magnitude == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));  // quiet NaN
  }
  // 65520 = the midpoint between the largest half (65504) and 2^16: it and above round to inf.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);

  const int32_t exponent = static_cast<int32_t>(magnitude >> 23) - 127;
  if (exponent >= -14) {
    // Normal half: drop 13 mantissa bits with round-to-nearest-even; a carry out of the
    // mantissa correctly bumps the exponent.
    const uint32_t rebiased = magnitude - (112u << 23);
    const uint32_t lowest_kept = (rebiased >> 13) & 1u;
    return static_cast<uint16_t>(sign | ((rebiased + 0xfffu + lowest_kept) >> 13));
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal: rounds to zero

  // Subnormal half: value = m * 2^-24 with the implicit bit made explicit.
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = static_cast<uint32_t>(-exponent - 1);  // 14..24
  const uint32_t kept = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  uint32_t rounded = kept;
  if (remainder > halfway || (remainder == halfway && (kept & 1u) != 0)) ++rounded;
  return static_cast<uint16_t>(sign | rounded);  // rounded == 0x400 is the smallest normal
}

}  // namespace switchyard::detail

#endif
