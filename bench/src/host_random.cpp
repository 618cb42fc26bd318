#include "host_random.hpp"

#include "dtype.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

namespace switchyard::bench {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// In (0, 1): 53 random bits, offset by half a step so that 0 and 1 never come out.
double uniform01(uint64_t seed, uint64_t index) {
  const uint64_t bits = splitmix64(splitmix64(seed) ^ index) >> 11;
  return (static_cast<double>(bits) + 0.5) * 0x1.0p-53;
}

// Runs fn(begin, end) over [0, count) on up to hardware_concurrency threads.
template <class Fn>
void parallel_for(int64_t count, Fn fn) {
  const int64_t min_per_thread = int64_t{1} << 20;
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t threads = std::clamp<int64_t>(count / min_per_thread, 1, hw);
  if (threads == 1) {
    fn(int64_t{0}, count);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t chunk = (count + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t begin = t * chunk, end = std::min(count, begin + chunk);
    if (begin < end) pool.emplace_back([=] { fn(begin, end); });
  }
  for (auto& thread : pool) thread.join();
}

float nonzero(float v, float lo, float hi) {
  if (v != 0.0f) return v;
  return (hi > 0 ? hi : lo) * 0.5f;  // the one value that would round to zero
}

}  // namespace

std::vector<uint8_t> random_elements(int64_t count, DLDataType dtype, float lo, float hi,
                                     uint64_t seed) {
  const int64_t width = dtype_bytes(dtype);
  std::vector<uint8_t> out(static_cast<size_t>(count * width));
  parallel_for(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float v = static_cast<float>(lo + (hi - lo) * uniform01(seed, static_cast<uint64_t>(i)));
      encode_element(dtype, nonzero(v, lo, hi), out.data() + i * width);
      if (decode_element(dtype, out.data() + i * width) == 0.0f)
        encode_element(dtype, nonzero(0.0f, lo, hi), out.data() + i * width);
    }
  });
  return out;
}

std::vector<float> random_floats(int64_t count, float lo, float hi, uint64_t seed) {
  std::vector<float> out(static_cast<size_t>(count));
  parallel_for(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = nonzero(
          static_cast<float>(lo + (hi - lo) * uniform01(seed, static_cast<uint64_t>(i))), lo, hi);
  });
  return out;
}

std::vector<int64_t> random_labels(int64_t count, int64_t bound, uint64_t seed) {
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    out[i] = std::min<int64_t>(
        bound - 1, static_cast<int64_t>(uniform01(seed, static_cast<uint64_t>(i)) * bound));
  return out;
}

std::vector<int64_t> sample_indices(int64_t count, int64_t bound, uint64_t seed) {
  count = std::min(count, bound);
  std::set<int64_t> picked;
  if (count >= 1) picked.insert(0);
  if (count >= 2) picked.insert(bound - 1);
  for (uint64_t k = 0; static_cast<int64_t>(picked.size()) < count; ++k)
    picked.insert(std::min<int64_t>(bound - 1, static_cast<int64_t>(uniform01(seed, k) * bound)));
  return {picked.begin(), picked.end()};
}

}  // namespace switchyard::bench
