// ThreadGroup results: every dtype and op against a serial computation on random data, in place
// and out of place, bit-identical on every rank, over many consecutive collectives.
#include <doctest/doctest.h>

#include <switchyard/comm.hpp>

#include "comm_test_support.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

using namespace comm_test;
using switchyard::ThreadGroup;

namespace {

// A dtype as the test sees it: how to make random values and how the serial reference folds
// them (in the accumulator type, then rounded back once).
struct Float32 {
  using T = float;
  static constexpr DLDataType dtype = kF32;
  static std::vector<T> random(std::mt19937_64& rng, size_t n) { return random_floats(rng, n); }
  static float load(T v) { return v; }
  static T store(float v) { return v; }
};
struct Float64 {
  using T = double;
  static constexpr DLDataType dtype = kF64;
  static std::vector<T> random(std::mt19937_64& rng, size_t n) { return random_doubles(rng, n); }
  static double load(T v) { return v; }
  static T store(double v) { return v; }
};
struct Bfloat16 {
  using T = uint16_t;
  static constexpr DLDataType dtype = kBF16;
  static std::vector<T> random(std::mt19937_64& rng, size_t n) {
    std::vector<T> out;
    for (float v : random_floats(rng, n)) out.push_back(reference_float_to_bf16(v));
    return out;
  }
  static float load(T v) { return reference_bf16_to_float(v); }
  static T store(float v) { return reference_float_to_bf16(v); }
};
struct Float16 {
  using T = uint16_t;
  static constexpr DLDataType dtype = kF16;
  static std::vector<T> random(std::mt19937_64& rng, size_t n) {
    std::vector<T> out;
    for (float v : random_floats(rng, n)) out.push_back(reference_float_to_f16(v));
    return out;
  }
  static float load(T v) { return reference_f16_to_float(v); }
  static T store(float v) { return reference_float_to_f16(v); }
};
struct Int32 {
  using T = int32_t;
  static constexpr DLDataType dtype = kI32;
  static std::vector<T> random(std::mt19937_64& rng, size_t n) {
    std::vector<T> out;
    for (int64_t v : random_ints(rng, n, 1 << 20)) out.push_back(static_cast<T>(v));
    return out;
  }
  static int32_t load(T v) { return v; }
  static T store(int32_t v) { return v; }
};
struct Int64 {
  using T = int64_t;
  static constexpr DLDataType dtype = kI64;
  static std::vector<T> random(std::mt19937_64& rng, size_t n) {
    return random_ints(rng, n, int64_t{1} << 40);
  }
  static int64_t load(T v) { return v; }
  static T store(int64_t v) { return v; }
};

template <class A>
A fold(sy_reduce_op op, A a, A b) {
  if (op == SY_REDUCE_SUM) return a + b;
  if (op == SY_REDUCE_MAX) return a < b ? b : a;
  return b < a ? b : a;
}

// The serial computation: element by element, ranks folded in order 0, 1, ..., n-1.
template <class D>
std::vector<typename D::T> serial_all_reduce(const std::vector<std::vector<typename D::T>>& in,
                                             sy_reduce_op op, bool reverse = false) {
  std::vector<typename D::T> out(in[0].size());
  const size_t n = in.size();
  for (size_t i = 0; i < out.size(); ++i) {
    auto acc = D::load(in[reverse ? n - 1 : 0][i]);
    for (size_t k = 1; k < n; ++k) acc = fold(op, acc, D::load(in[reverse ? n - 1 - k : k][i]));
    out[i] = D::store(acc);
  }
  return out;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

const char* op_name(sy_reduce_op op) {
  return op == SY_REDUCE_SUM ? "SUM" : op == SY_REDUCE_MAX ? "MAX" : "MIN";
}

template <class D>
void check_all_reduce(int32_t size, sy_reduce_op op, bool in_place, uint64_t seed) {
  using T = typename D::T;
  const size_t count = 2500;  // crosses the reduction's 1024-element chunks
  std::mt19937_64 rng(seed);
  std::vector<std::vector<T>> inputs;
  for (int32_t r = 0; r < size; ++r) inputs.push_back(D::random(rng, count));
  const std::vector<T> expected = serial_all_reduce<D>(inputs, op);

  ThreadGroup group(size);
  std::vector<std::vector<T>> sends = inputs;
  std::vector<std::vector<T>> recvs(size, std::vector<T>(count, T{}));
  std::vector<Outcome> outcomes(size);
  run_ranks(size, [&](int32_t rank) {
    const sy_comm* comm = group.comm(rank);
    sy_error err = fresh_error();
    T* recv = in_place ? sends[rank].data() : recvs[rank].data();
    const sy_status status = comm->all_reduce(comm->ctx, sends[rank].data(), recv,
                                              static_cast<int64_t>(count), D::dtype, op,
                                              nullptr, &err);
    outcomes[rank] = outcome(status, err);
  });
  for (int32_t rank = 0; rank < size; ++rank) {
    CAPTURE(rank);
    REQUIRE_MESSAGE(outcomes[rank].status == SY_OK, outcomes[rank].message);
    const std::vector<T>& got = in_place ? sends[rank] : recvs[rank];
    CHECK(same_bits(got, expected));
    if (!in_place) CHECK(same_bits(sends[rank], inputs[rank]));  // send is left alone
  }
  CHECK(group.all_reduces(0) == 1);
  CHECK(group.all_gathers(0) == 0);
}

template <class D>
void check_all_gather(int32_t size, bool in_place, uint64_t seed) {
  using T = typename D::T;
  const size_t count = 777;
  std::mt19937_64 rng(seed);
  std::vector<std::vector<T>> inputs;
  std::vector<T> expected;
  for (int32_t r = 0; r < size; ++r) {
    inputs.push_back(D::random(rng, count));
    expected.insert(expected.end(), inputs.back().begin(), inputs.back().end());
  }

  ThreadGroup group(size);
  std::vector<std::vector<T>> recvs(size, std::vector<T>(count * size, T{}));
  std::vector<Outcome> outcomes(size);
  run_ranks(size, [&](int32_t rank) {
    const sy_comm* comm = group.comm(rank);
    sy_error err = fresh_error();
    const T* send = inputs[rank].data();
    if (in_place) {  // send is this rank's slot of recv
      T* slot = recvs[rank].data() + static_cast<size_t>(rank) * count;
      std::copy(inputs[rank].begin(), inputs[rank].end(), slot);
      send = slot;
    }
    const sy_status status = comm->all_gather(comm->ctx, send, recvs[rank].data(),
                                              static_cast<int64_t>(count), D::dtype, nullptr,
                                              &err);
    outcomes[rank] = outcome(status, err);
  });
  for (int32_t rank = 0; rank < size; ++rank) {
    CAPTURE(rank);
    REQUIRE_MESSAGE(outcomes[rank].status == SY_OK, outcomes[rank].message);
    CHECK(same_bits(recvs[rank], expected));
  }
  CHECK(group.all_gathers(size - 1) == 1);
  CHECK(group.collectives(size - 1) == 1);
}

template <class D>
void check_dtype(const char* name) {
  uint64_t seed = 1000;
  for (int32_t size : {2, 4, 8}) {
    for (bool in_place : {false, true}) {
      const std::string layout = in_place ? " in place" : " out of place";
      for (sy_reduce_op op : {SY_REDUCE_SUM, SY_REDUCE_MAX, SY_REDUCE_MIN}) {
        INFO(name << " all_reduce " << op_name(op) << " size " << size << layout);
        check_all_reduce<D>(size, op, in_place, ++seed);
      }
      INFO(name << " all_gather size " << size << layout);
      check_all_gather<D>(size, in_place, ++seed);
    }
  }
}

}  // namespace

TEST_CASE("thread group: float32") { check_dtype<Float32>("float32"); }
TEST_CASE("thread group: int64") { check_dtype<Int64>("int64"); }
TEST_CASE("thread group: bfloat16 (reduced in float32, rounded once)") { check_dtype<Bfloat16>("bfloat16"); }
TEST_CASE("thread group: float16 (reduced in float32, rounded once)") { check_dtype<Float16>("float16"); }
TEST_CASE("thread group: float64") { check_dtype<Float64>("float64"); }
TEST_CASE("thread group: int32") { check_dtype<Int32>("int32"); }

TEST_CASE("thread group: the references above can tell a wrong summation order apart") {
  // The check above compares bits with a rank-order fold. Make sure that comparison has teeth:
  // on this data, folding in the opposite order gives different bits.
  std::mt19937_64 rng(7);
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < 8; ++r) inputs.push_back(random_floats(rng, 2500));
  CHECK_FALSE(same_bits(serial_all_reduce<Float32>(inputs, SY_REDUCE_SUM),
                        serial_all_reduce<Float32>(inputs, SY_REDUCE_SUM, /*reverse=*/true)));
  // And that bfloat16 is folded in float32 and rounded once: rounding after every step (as a
  // bfloat16 accumulator would) gives different bits.
  std::vector<std::vector<uint16_t>> halves;
  for (const auto& values : inputs) {
    halves.emplace_back();
    for (float v : values) halves.back().push_back(reference_float_to_bf16(v));
  }
  std::vector<uint16_t> rounded_each_step(halves[0].size());
  for (size_t i = 0; i < rounded_each_step.size(); ++i) {
    uint16_t acc = halves[0][i];
    for (size_t r = 1; r < halves.size(); ++r) {
      acc = reference_float_to_bf16(reference_bf16_to_float(acc) +
                                    reference_bf16_to_float(halves[r][i]));
    }
    rounded_each_step[i] = acc;
  }
  CHECK_FALSE(same_bits(serial_all_reduce<Bfloat16>(halves, SY_REDUCE_SUM), rounded_each_step));
}

TEST_CASE("thread group: identical bits on every rank and from run to run") {
  const int32_t size = 8;
  std::mt19937_64 rng(99);
  std::vector<std::vector<float>> inputs;
  for (int32_t r = 0; r < size; ++r) inputs.push_back(random_floats(rng, 4096));
  std::vector<std::vector<float>> first_run;
  for (int run = 0; run < 3; ++run) {
    ThreadGroup group(size);
    std::vector<std::vector<float>> recvs(size, std::vector<float>(4096));
    run_ranks(size, [&](int32_t rank) {
      const sy_comm* comm = group.comm(rank);
      comm->all_reduce(comm->ctx, inputs[rank].data(), recvs[rank].data(), 4096, kF32,
                       SY_REDUCE_SUM, nullptr, nullptr);
    });
    for (int32_t rank = 1; rank < size; ++rank) CHECK(same_bits(recvs[rank], recvs[0]));
    if (run == 0) first_run = recvs;
    CHECK(same_bits(recvs[0], first_run[0]));
  }
}

TEST_CASE("thread group: MAX and MIN propagate NaN; int64 sums wrap instead of trapping") {
  ThreadGroup group(2);
  const float nan = std::nanf("");
  std::vector<std::vector<float>> floats{{1.0f, nan, 3.0f}, {nan, 2.0f, -1.0f}};
  std::vector<std::vector<float>> maxima(2, std::vector<float>(3)), minima = maxima;
  std::vector<std::vector<int64_t>> ints{{INT64_MAX, -5}, {1, 7}};
  std::vector<std::vector<int64_t>> sums(2, std::vector<int64_t>(2));
  run_ranks(2, [&](int32_t rank) {
    const sy_comm* comm = group.comm(rank);
    comm->all_reduce(comm->ctx, floats[rank].data(), maxima[rank].data(), 3, kF32,
                     SY_REDUCE_MAX, nullptr, nullptr);
    comm->all_reduce(comm->ctx, floats[rank].data(), minima[rank].data(), 3, kF32,
                     SY_REDUCE_MIN, nullptr, nullptr);
    comm->all_reduce(comm->ctx, ints[rank].data(), sums[rank].data(), 2, kI64, SY_REDUCE_SUM,
                     nullptr, nullptr);
  });
  for (int rank = 0; rank < 2; ++rank) {
    CHECK(std::isnan(maxima[rank][0]));
    CHECK(std::isnan(maxima[rank][1]));
    CHECK(maxima[rank][2] == 3.0f);
    CHECK(std::isnan(minima[rank][0]));
    CHECK(std::isnan(minima[rank][1]));
    CHECK(minima[rank][2] == -1.0f);
    CHECK(sums[rank][0] == INT64_MIN);
    CHECK(sums[rank][1] == 2);
  }
}

TEST_CASE("thread group: many consecutive collectives, mixed, with counts") {
  const int32_t size = 8;
  const int iterations = 200;
  ThreadGroup group(size);
  std::vector<int> failures(size, 0);
  std::vector<std::string> first_failure(size);
  run_ranks(size, [&](int32_t rank) {
    const sy_comm* comm = group.comm(rank);
    for (int it = 0; it < iterations; ++it) {
      const int64_t count = 1 + it % 13;
      sy_error err = fresh_error();
      bool ok = true;
      if (it % 2 == 0) {
        // sum over ranks of (rank + 1) * (i + it) = (i + it) * size * (size + 1) / 2
        std::vector<int64_t> values(count);
        for (int64_t i = 0; i < count; ++i) values[i] = (rank + 1) * (i + it);
        ok = comm->all_reduce(comm->ctx, values.data(), values.data(), count, kI64,
                              SY_REDUCE_SUM, nullptr, &err) == SY_OK;
        for (int64_t i = 0; ok && i < count; ++i) {
          ok = values[i] == (i + it) * size * (size + 1) / 2;
        }
      } else {
        std::vector<float> mine(count), all(count * size, -1.0f);
        for (int64_t i = 0; i < count; ++i) mine[i] = static_cast<float>(rank * 1000 + it + i);
        ok = comm->all_gather(comm->ctx, mine.data(), all.data(), count, kF32, nullptr,
                              &err) == SY_OK;
        for (int32_t r = 0; ok && r < size; ++r) {
          for (int64_t i = 0; ok && i < count; ++i) {
            ok = all[r * count + i] == static_cast<float>(r * 1000 + it + i);
          }
        }
      }
      if (!ok && failures[rank]++ == 0) {
        first_failure[rank] = "iteration " + std::to_string(it) + ": " + err.message;
      }
    }
  });
  for (int32_t rank = 0; rank < size; ++rank) {
    CAPTURE(rank);
    CHECK_MESSAGE(failures[rank] == 0, first_failure[rank]);
    CHECK(group.collectives(rank) == iterations);
    CHECK(group.all_reduces(rank) == iterations / 2);
    CHECK(group.all_gathers(rank) == iterations / 2);
  }
  group.reset_counts();
  CHECK(group.collectives(3) == 0);
  CHECK(group.all_reduces(3) == 0);
  CHECK(group.all_gathers(3) == 0);
}

TEST_CASE("thread group: the sy_comm table describes each rank") {
  ThreadGroup group(4);
  CHECK(group.size() == 4);
  for (int32_t rank = 0; rank < 4; ++rank) {
    const sy_comm* comm = group.comm(rank);
    REQUIRE(comm != nullptr);
    CHECK(comm->struct_size == sizeof(sy_comm));
    CHECK(comm->rank == rank);
    CHECK(comm->size == 4);
    CHECK(comm->device.device_type == kDLCPU);
    CHECK((comm->all_reduce != nullptr));
    CHECK((comm->all_gather != nullptr));
  }
  CHECK(group.comm(0)->ctx != group.comm(1)->ctx);
}

TEST_CASE("thread group: a group of one and zero-length collectives") {
  ThreadGroup one(1);
  std::vector<double> values{1.5, -2.5};
  std::vector<double> out(2, 0.0);
  const sy_comm* comm = one.comm(0);
  CHECK(comm->all_reduce(comm->ctx, values.data(), out.data(), 2, kF64, SY_REDUCE_SUM, nullptr,
                         nullptr) == SY_OK);
  CHECK(out == values);

  ThreadGroup group(2);
  std::vector<sy_status> statuses(2, -1);
  run_ranks(2, [&](int32_t rank) {
    const sy_comm* c = group.comm(rank);
    sy_error err = fresh_error();
    statuses[rank] = c->all_gather(c->ctx, nullptr, nullptr, 0, kI32, nullptr, &err);
  });
  CHECK(statuses == std::vector<sy_status>{SY_OK, SY_OK});
  CHECK(group.all_gathers(1) == 1);
}
