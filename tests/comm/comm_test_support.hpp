// Helpers shared by the collective tests: running N ranks as threads, error records, the
// dtypes, and random data.
#ifndef SWITCHYARD_TESTS_COMM_TEST_SUPPORT_HPP
#define SWITCHYARD_TESTS_COMM_TEST_SUPPORT_HPP

#include <switchyard/abi.h>

#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace comm_test {

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};
constexpr DLDataType kBF16{kDLBfloat, 16, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};

// An sy_error whose fields show whether the callee wrote them.
sy_error fresh_error();

// What one rank's call returned.
struct Outcome {
  sy_status status = -1;
  std::string message;
};
Outcome outcome(sy_status status, const sy_error& err);

// Runs body(rank) on `size` threads at once and waits for all of them.
template <class Body>
void run_ranks(int32_t size, Body body) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(size));
  for (int32_t rank = 0; rank < size; ++rank) threads.emplace_back(body, rank);
  for (std::thread& thread : threads) thread.join();
}

// Floats spread over several binades, so that the order of a sum changes its rounding.
std::vector<float> random_floats(std::mt19937_64& rng, size_t count);
std::vector<double> random_doubles(std::mt19937_64& rng, size_t count);
std::vector<int64_t> random_ints(std::mt19937_64& rng, size_t count, int64_t magnitude);

// Reference conversions written independently of the core's (nearest representable value,
// ties to the even one, found by comparing the two candidates).
float reference_bf16_to_float(uint16_t bits);
uint16_t reference_float_to_bf16(float value);
float reference_f16_to_float(uint16_t bits);
uint16_t reference_float_to_f16(float value);

}  // namespace comm_test

#endif
