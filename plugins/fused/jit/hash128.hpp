// A 128-bit non-cryptographic hash: MurmurHash3_x64_128 (Austin Appleby, public domain),
// written from its specification. It keys the JIT kernel cache and checksums cache entries;
// nobody attacks a per-user cache folder, so collision resistance against accidents is what
// counts, and 128 bits make an accidental collision negligible.
//
// Header-only and free of CUDA: the plugin and the `switchyard cache` command share it.
#ifndef SWITCHYARD_FUSED_JIT_HASH128_HPP
#define SWITCHYARD_FUSED_JIT_HASH128_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::fused::jit {

struct Hash128 {
  uint64_t low = 0;   // MurmurHash3's h1
  uint64_t high = 0;  // MurmurHash3's h2

  bool operator==(const Hash128& other) const { return low == other.low && high == other.high; }
  bool operator!=(const Hash128& other) const { return !(*this == other); }
  bool operator<(const Hash128& other) const {
    return high != other.high ? high < other.high : low < other.low;
  }

  // 32 lower-case hex digits: the 16 bytes h1 then h2, each little-endian (the byte order of
  // the reference implementation's output, so published test vectors read the same).
  std::string hex() const {
    static const char digits[] = "0123456789abcdef";
    std::string text;
    text.reserve(32);
    for (uint64_t word : {low, high})
      for (int byte = 0; byte < 8; ++byte) {
        const unsigned value = static_cast<unsigned>((word >> (8 * byte)) & 0xffu);
        text += digits[value >> 4];
        text += digits[value & 0xfu];
      }
    return text;
  }

  static std::optional<Hash128> from_hex(std::string_view text) {
    if (text.size() != 32) return std::nullopt;
    Hash128 hash;
    for (int i = 0; i < 32; i += 2) {
      int nibbles[2];
      for (int k = 0; k < 2; ++k) {
        const char c = text[static_cast<size_t>(i + k)];
        if (c >= '0' && c <= '9') nibbles[k] = c - '0';
        else if (c >= 'a' && c <= 'f') nibbles[k] = c - 'a' + 10;
        else return std::nullopt;
      }
      const uint64_t value = static_cast<uint64_t>(nibbles[0] * 16 + nibbles[1]);
      const int byte = i / 2;
      uint64_t& word = byte < 8 ? hash.low : hash.high;
      word |= value << (8 * (byte % 8));
    }
    return hash;
  }
};

namespace detail {

inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

// Little-endian regardless of the host, so that keys are the same on every machine.
inline uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace detail

inline Hash128 murmur3_128(const void* data, size_t length, uint32_t seed = 0) {
  using detail::rotl64;
  const auto* bytes = static_cast<const unsigned char*>(data);
  const size_t blocks = length / 16;
  uint64_t h1 = seed, h2 = seed;
  constexpr uint64_t c1 = 0x87c37b91114253d5ULL;
  constexpr uint64_t c2 = 0x4cf5ad432745937fULL;

  for (size_t i = 0; i < blocks; ++i) {
    uint64_t k1 = detail::load_le64(bytes + 16 * i);
    uint64_t k2 = detail::load_le64(bytes + 16 * i + 8);
    k1 *= c1;
    k1 = rotl64(k1, 31);
    k1 *= c2;
    h1 ^= k1;
    h1 = rotl64(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    k2 *= c2;
    k2 = rotl64(k2, 33);
    k2 *= c1;
    h2 ^= k2;
    h2 = rotl64(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }

  const unsigned char* tail = bytes + 16 * blocks;
  const size_t rest = length & 15u;
  uint64_t k1 = 0, k2 = 0;
  for (size_t i = rest; i > 8; --i) k2 ^= static_cast<uint64_t>(tail[i - 1]) << (8 * (i - 9));
  if (rest > 8) {
    k2 *= c2;
    k2 = rotl64(k2, 33);
    k2 *= c1;
    h2 ^= k2;
  }
  for (size_t i = rest < 8 ? rest : 8; i > 0; --i)
    k1 ^= static_cast<uint64_t>(tail[i - 1]) << (8 * (i - 1));
  if (rest > 0) {
    k1 *= c1;
    k1 = rotl64(k1, 31);
    k1 *= c2;
    h1 ^= k1;
  }

  h1 ^= static_cast<uint64_t>(length);
  h2 ^= static_cast<uint64_t>(length);
  h1 += h2;
  h2 += h1;
  h1 = detail::fmix64(h1);
  h2 = detail::fmix64(h2);
  h1 += h2;
  h2 += h1;
  return Hash128{h1, h2};
}

inline Hash128 murmur3_128(std::string_view text, uint32_t seed = 0) {
  return murmur3_128(text.data(), text.size(), seed);
}

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_HASH128_HPP
