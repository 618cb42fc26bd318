// Deterministic random inputs on the host, generated in parallel. Counter-based (element i of
// stream `seed` is a hash of both), so the values do not depend on the number of threads.
// Values are never zero: zeros hide unwritten outputs and can run faster than real data.
#ifndef SWITCHYARD_BENCH_HOST_RANDOM_HPP
#define SWITCHYARD_BENCH_HOST_RANDOM_HPP

#include <dlpack/dlpack.h>

#include <cstdint>
#include <vector>

namespace switchyard::bench {

// `count` elements of a data dtype, uniform in [lo, hi], encoded into bytes.
std::vector<uint8_t> random_elements(int64_t count, DLDataType dtype, float lo, float hi,
                                     uint64_t seed);

// Uniform floats in [lo, hi] (0 < lo recommended for scales).
std::vector<float> random_floats(int64_t count, float lo, float hi, uint64_t seed);

// Uniform integers in [0, bound).
std::vector<int64_t> random_labels(int64_t count, int64_t bound, uint64_t seed);

// `count` distinct sorted indices in [0, bound), spread over the whole range (first and last
// included when count >= 2), so that the check sees both ends of the tensor.
std::vector<int64_t> sample_indices(int64_t count, int64_t bound, uint64_t seed);

}  // namespace switchyard::bench

#endif
