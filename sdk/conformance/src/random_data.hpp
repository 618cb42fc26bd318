// Reproducible random inputs: std::mt19937_64 seeded per case, with our own mapping to
// doubles (the standard distributions differ between standard libraries).
#ifndef SWITCHYARD_CONFORMANCE_RANDOM_DATA_HPP
#define SWITCHYARD_CONFORMANCE_RANDOM_DATA_HPP

#include <cstdint>
#include <random>
#include <string>

namespace switchyard::conformance {

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  double uniform();                         // [0, 1)
  double uniform(double low, double high);  // [low, high)
  // |value| in [min_abs, max_abs), random sign: never zero.
  double nonzero(double min_abs, double max_abs);
  int64_t integer(int64_t low, int64_t high);  // [low, high)
  bool chance(double probability);

 private:
  std::mt19937_64 engine_;
};

// The seed of one case: its name (without the seed) mixed with the user's seed, so every
// case sees different data and a seed reproduces a case exactly.
uint64_t case_seed(const std::string& case_key, uint64_t seed);

}  // namespace switchyard::conformance

#endif
