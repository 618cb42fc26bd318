#include "random_data.hpp"

namespace switchyard::conformance {

double Random::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

double Random::uniform(double low, double high) { return low + (high - low) * uniform(); }

double Random::nonzero(double min_abs, double max_abs) {
  const double magnitude = uniform(min_abs, max_abs);
  return (engine_() & 1u) != 0 ? -magnitude : magnitude;
}

int64_t Random::integer(int64_t low, int64_t high) {
  const uint64_t span = static_cast<uint64_t>(high - low);
  return low + static_cast<int64_t>(engine_() % span);
}

bool Random::chance(double probability) { return uniform() < probability; }

uint64_t case_seed(const std::string& case_key, uint64_t seed) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : case_key) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash ^ (seed * 0x9e3779b97f4a7c15ull);
}

}  // namespace switchyard::conformance
