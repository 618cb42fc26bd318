// Counter-based random numbers: every value is a pure function of (seed, stream, index), so
// a parameter element or a batch row gets the same number however the work is split across
// ranks or threads, and no generator state has to be passed around.
#ifndef SWITCHYARD_LM_HEAD_RNG_HPP
#define SWITCHYARD_LM_HEAD_RNG_HPP

#include <cmath>
#include <cstdint>

namespace switchyard::lm_head {

// What a random stream is used for; part of the hash so that streams never overlap.
enum class Stream : uint64_t {
  Embedding = 1,
  Projection = 2,
  BatchPositions = 3,
  SyntheticInput = 4,
  SyntheticNoise = 5,
  SyntheticNoiseToken = 6,
};

// splitmix64's finaliser: a bijective mix with good avalanche.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t random_bits(uint64_t seed, Stream stream, uint64_t index) {
  return mix64(mix64(mix64(seed) ^ static_cast<uint64_t>(stream)) ^ index);
}

// Uniform in (0, 1): 53 random bits, never exactly 0 (safe for log).
inline double random_uniform(uint64_t seed, Stream stream, uint64_t index) {
  return (static_cast<double>(random_bits(seed, stream, index) >> 11) + 0.5) * 0x1.0p-53;
}

// Standard normal by Box-Muller over two decorrelated counters.
inline double random_normal(uint64_t seed, Stream stream, uint64_t index) {
  const double u1 = random_uniform(seed, stream, 2 * index);
  const double u2 = random_uniform(seed, stream, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Uniform integer in [0, n), n > 0. The modulo bias is below 2^-40 for any n we use.
inline uint64_t random_below(uint64_t seed, Stream stream, uint64_t index, uint64_t n) {
  return random_bits(seed, stream, index) % n;
}

}  // namespace switchyard::lm_head

#endif
