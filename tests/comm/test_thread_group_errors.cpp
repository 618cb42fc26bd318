// ThreadGroup failures: each is reported through sy_error with a sentence that names the
// problem — never a hang, never a crash — and, where the ranks stayed in step, the group keeps
// working afterwards.
#include <doctest/doctest.h>

#include <switchyard/comm.hpp>
#include <switchyard/switchyard.hpp>

#include "comm_cuda_pointer.hpp"
#include "comm_test_support.hpp"

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

using namespace comm_test;
using switchyard::ThreadGroup;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every rank does an all_reduce of `counts[rank]` float32 (op and dtype per rank too).
std::vector<Outcome> all_reduce_each(ThreadGroup& group, const std::vector<int64_t>& counts,
                                     const std::vector<DLDataType>& dtypes,
                                     const std::vector<sy_reduce_op>& ops) {
  const int32_t size = group.size();
  std::vector<Outcome> outcomes(size);
  std::vector<std::vector<double>> buffers(size, std::vector<double>(64, 1.0));
  run_ranks(size, [&](int32_t rank) {
    const sy_comm* comm = group.comm(rank);
    sy_error err = fresh_error();
    const sy_status status =
        comm->all_reduce(comm->ctx, buffers[rank].data(), buffers[rank].data(), counts[rank],
                         dtypes[rank], ops[rank], nullptr, &err);
    outcomes[rank] = outcome(status, err);
  });
  return outcomes;
}

// A successful collective on every rank: the group is still usable.
void check_group_still_works(ThreadGroup& group) {
  const int32_t size = group.size();
  std::vector<std::vector<int32_t>> values(size, std::vector<int32_t>(3));
  std::vector<Outcome> outcomes(size);
  run_ranks(size, [&](int32_t rank) {
    for (int i = 0; i < 3; ++i) values[rank][i] = rank + i;
    const sy_comm* comm = group.comm(rank);
    sy_error err = fresh_error();
    outcomes[rank] = outcome(comm->all_reduce(comm->ctx, values[rank].data(), values[rank].data(),
                                              3, kI32, SY_REDUCE_MAX, nullptr, &err),
                             err);
  });
  for (int32_t rank = 0; rank < size; ++rank) {
    CAPTURE(rank);
    CHECK_MESSAGE(outcomes[rank].status == SY_OK, outcomes[rank].message);
    CHECK(values[rank] == std::vector<int32_t>{size - 1, size, size + 1});
  }
}

}  // namespace

TEST_CASE("thread group: ranks that disagree on the count all fail, and say who passed what") {
  ThreadGroup group(4);
  const auto outcomes = all_reduce_each(group, {16, 16, 8, 16}, {kF32, kF32, kF32, kF32},
                                        {SY_REDUCE_SUM, SY_REDUCE_SUM, SY_REDUCE_SUM,
                                         SY_REDUCE_SUM});
  for (int rank = 0; rank < 4; ++rank) {
    CAPTURE(outcomes[rank].message);
    CHECK(outcomes[rank].status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(outcomes[rank].message, "thread group rank " + std::to_string(rank)));
    CHECK(contains(outcomes[rank].message,
                   "the ranks disagree on the count (rank 0: 16, rank 1: 16, rank 2: 8, "
                   "rank 3: 16)"));
    CHECK(contains(outcomes[rank].message, "same order with the same count, dtype and op"));
  }
  check_group_still_works(group);
}

TEST_CASE("thread group: ranks that disagree on the dtype or the op") {
  ThreadGroup group(2);
  auto outcomes = all_reduce_each(group, {4, 4}, {kF32, kF64}, {SY_REDUCE_SUM, SY_REDUCE_SUM});
  for (const Outcome& o : outcomes) {
    CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(o.message, "disagree on the dtype (rank 0: float32, rank 1: float64)"));
  }
  outcomes = all_reduce_each(group, {4, 4}, {kI64, kI64}, {SY_REDUCE_MAX, SY_REDUCE_MIN});
  for (const Outcome& o : outcomes) {
    CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(o.message, "disagree on the op (rank 0: MAX, rank 1: MIN)"));
  }
  check_group_still_works(group);
}

TEST_CASE("thread group: ranks that call different collectives") {
  ThreadGroup group(2);
  std::vector<Outcome> outcomes(2);
  std::vector<float> send(4, 1.0f), recv(8, 0.0f);
  run_ranks(2, [&](int32_t rank) {
    const sy_comm* comm = group.comm(rank);
    std::vector<float> mine = send, theirs = recv;
    sy_error err = fresh_error();
    const sy_status status =
        rank == 0 ? comm->all_reduce(comm->ctx, mine.data(), mine.data(), 4, kF32,
                                     SY_REDUCE_SUM, nullptr, &err)
                  : comm->all_gather(comm->ctx, mine.data(), theirs.data(), 4, kF32, nullptr,
                                     &err);
    outcomes[rank] = outcome(status, err);
  });
  for (const Outcome& o : outcomes) {
    CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(o.message,
                   "disagree on the collective (rank 0: all_reduce, rank 1: all_gather)"));
  }
  check_group_still_works(group);
}

TEST_CASE("thread group: one rank's bad arguments fail every rank, with that rank's reason") {
  ThreadGroup group(3);
  std::vector<Outcome> outcomes(3);
  std::vector<std::vector<float>> buffers(3, std::vector<float>(10, 2.0f));
  run_ranks(3, [&](int32_t rank) {
    const sy_comm* comm = group.comm(rank);
    sy_error err = fresh_error();
    float* send = rank == 1 ? nullptr : buffers[rank].data();
    outcomes[rank] = outcome(comm->all_reduce(comm->ctx, send, buffers[rank].data(), 10, kF32,
                                              SY_REDUCE_SUM, nullptr, &err),
                             err);
  });
  CHECK(outcomes[1].status == SY_ERR_INVALID_ARGUMENT);
  CHECK(outcomes[1].message ==
        "thread group rank 1: all_reduce: send is NULL; expected a host buffer of 10 float32 "
        "elements.");
  for (int rank : {0, 2}) {
    CAPTURE(outcomes[rank].message);
    CHECK(outcomes[rank].status == SY_ERR_COMMUNICATION);
    CHECK(contains(outcomes[rank].message, "rank 1 passed invalid arguments, so no rank's recv "
                                           "was written"));
    CHECK(contains(outcomes[rank].message, "send is NULL"));
  }
  // Nobody's recv was touched.
  for (const auto& buffer : buffers) CHECK(buffer == std::vector<float>(10, 2.0f));
  check_group_still_works(group);
}

TEST_CASE("thread group: unsupported dtype, bad op, negative count") {
  ThreadGroup group(2);
  auto outcomes = all_reduce_each(group, {4, 4}, {kU8, kU8}, {SY_REDUCE_SUM, SY_REDUCE_SUM});
  for (const Outcome& o : outcomes) {
    CHECK(o.status == SY_ERR_UNSUPPORTED);
    CHECK(contains(o.message, "dtype uint8 is not supported; supported dtypes: float32, "
                              "float64, bfloat16, float16, int32, int64."));
  }
  const DLDataType vector_f32{kDLFloat, 32, 4};
  outcomes = all_reduce_each(group, {4, 4}, {vector_f32, vector_f32},
                             {SY_REDUCE_SUM, SY_REDUCE_SUM});
  CHECK(contains(outcomes[0].message, "dtype float32x4 is not supported"));

  outcomes = all_reduce_each(group, {4, 4}, {kF32, kF32}, {7, 7});
  for (const Outcome& o : outcomes) {
    CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(o.message, "op is 7; expected SY_REDUCE_SUM (0), SY_REDUCE_MAX (1) or "
                              "SY_REDUCE_MIN (2)."));
  }
  outcomes = all_reduce_each(group, {-3, -3}, {kF32, kF32}, {SY_REDUCE_SUM, SY_REDUCE_SUM});
  for (const Outcome& o : outcomes) {
    CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(o.message, "count is -3; expected a count >= 0."));
  }
  check_group_still_works(group);
}

TEST_CASE("thread group: a rank that never arrives fails the others within the timeout") {
  const int timeout_ms = 300;
  ThreadGroup group(4, timeout_ms);
  std::vector<Outcome> outcomes(2);
  const auto start = std::chrono::steady_clock::now();
  run_ranks(2, [&](int32_t rank) {  // ranks 2 and 3 never call
    std::vector<float> values(5, 1.0f);
    const sy_comm* comm = group.comm(rank);
    sy_error err = fresh_error();
    outcomes[rank] = outcome(comm->all_reduce(comm->ctx, values.data(), values.data(), 5, kF32,
                                              SY_REDUCE_SUM, nullptr, &err),
                             err);
  });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= std::chrono::milliseconds(timeout_ms));
  CHECK(elapsed < std::chrono::seconds(20));
  for (const Outcome& o : outcomes) {
    CAPTURE(o.message);
    CHECK(o.status == SY_ERR_COMMUNICATION);
    CHECK(contains(o.message, "all_reduce #1 timed out after 300 ms"));
    CHECK(contains(o.message, "ranks 2, 3 of 4 never arrived"));
    CHECK(contains(o.message, "ranks 0, 1 were waiting"));
  }
  // The group is broken for good: a late rank fails at once, with the original reason.
  std::vector<float> values(5, 1.0f);
  sy_error err = fresh_error();
  const auto late_start = std::chrono::steady_clock::now();
  const sy_comm* comm = group.comm(2);
  CHECK(comm->all_reduce(comm->ctx, values.data(), values.data(), 5, kF32, SY_REDUCE_SUM,
                         nullptr, &err) == SY_ERR_COMMUNICATION);
  CHECK(std::chrono::steady_clock::now() - late_start < std::chrono::milliseconds(timeout_ms));
  CHECK(contains(err.message, "the group is unusable since an earlier collective failed"));
  CHECK(contains(err.message, "ranks 2, 3 of 4 never arrived"));
}

TEST_CASE("thread group: a single missing rank is named in the singular") {
  ThreadGroup group(2, 50);
  std::vector<float> values(5, 1.0f), all(10);
  sy_error err = fresh_error();
  const sy_comm* comm = group.comm(1);
  CHECK(comm->all_gather(comm->ctx, values.data(), all.data(), 5, kF32, nullptr, &err) ==
        SY_ERR_COMMUNICATION);
  CHECK(contains(err.message, "all_gather #1 timed out after 50 ms: rank 0 of 2 never arrived "
                              "(rank 1 was waiting)"));
}

namespace {
const void* fake_device_buffer = nullptr;
bool pretend_device(const void* pointer) { return pointer == fake_device_buffer; }
}  // namespace

TEST_CASE("thread group: CUDA device buffers are refused, pointing at libswitchyard-nccl") {
  std::vector<float> device_stand_in(8, 0.0f);
  fake_device_buffer = device_stand_in.data();
  switchyard::detail::set_cuda_pointer_classifier_for_testing(&pretend_device);

  ThreadGroup group(2);
  std::vector<Outcome> outcomes(2);
  std::vector<std::vector<float>> host(2, std::vector<float>(8, 1.0f));
  run_ranks(2, [&](int32_t rank) {
    const sy_comm* comm = group.comm(rank);
    float* recv = rank == 0 ? device_stand_in.data() : host[rank].data();
    sy_error err = fresh_error();
    outcomes[rank] = outcome(comm->all_reduce(comm->ctx, host[rank].data(), recv, 8, kF32,
                                              SY_REDUCE_SUM, nullptr, &err),
                             err);
  });
  switchyard::detail::set_cuda_pointer_classifier_for_testing(nullptr);

  CHECK(outcomes[0].status == SY_ERR_INVALID_ARGUMENT);
  CHECK(outcomes[0].message ==
        "thread group rank 0: all_reduce: recv is CUDA device memory, but the thread group "
        "handles CPU buffers; use libswitchyard-nccl for CUDA (expected a host buffer of 8 "
        "float32 elements).");
  CHECK(outcomes[1].status == SY_ERR_COMMUNICATION);
  CHECK(contains(outcomes[1].message, "the thread group handles CPU buffers; use "
                                      "libswitchyard-nccl for CUDA"));
  CHECK(device_stand_in == std::vector<float>(8, 0.0f));
  // Without the test hook and without a CUDA driver loaded, host memory is host memory.
  CHECK_FALSE(switchyard::detail::is_cuda_device_pointer(device_stand_in.data()));
}

TEST_CASE("thread group: a NULL sy_error, an older sy_error and a NULL ctx are all safe") {
  ThreadGroup group(1);
  const sy_comm* comm = group.comm(0);
  CHECK(comm->all_reduce(comm->ctx, nullptr, nullptr, 4, kF32, SY_REDUCE_SUM, nullptr,
                         nullptr) == SY_ERR_INVALID_ARGUMENT);

  // A caller built against an sy_error without `message`: status is written, nothing more.
  struct {
    sy_error err;
    char guard[8];
  } small{};
  small.err.struct_size = offsetof(sy_error, message);
  std::strcpy(small.err.message, "keep");
  CHECK(comm->all_reduce(comm->ctx, nullptr, nullptr, 4, kF32, SY_REDUCE_SUM, nullptr,
                         &small.err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(small.err.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(small.err.message) == "keep");

  sy_error err = fresh_error();
  std::vector<float> values(2, 1.0f);
  CHECK(comm->all_reduce(nullptr, values.data(), values.data(), 2, kF32, SY_REDUCE_SUM, nullptr,
                         &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "ctx is NULL"));
}

TEST_CASE("thread group: bad construction and out-of-range ranks throw switchyard::Error") {
  CHECK_THROWS_WITH_AS(ThreadGroup(0), "ThreadGroup: size is 0; expected at least 1 rank.",
                       switchyard::Error);
  CHECK_THROWS_WITH_AS(ThreadGroup(2, 0),
                       doctest::Contains("timeout_ms is 0; expected a positive number"),
                       switchyard::Error);
  ThreadGroup group(2);
  CHECK_THROWS_WITH_AS(group.comm(2),
                       "ThreadGroup::comm: rank 2 is out of range; expected 0 <= rank < 2.",
                       switchyard::Error);
  CHECK_THROWS_AS(group.collectives(-1), switchyard::Error);
  try {
    group.comm(5);
  } catch (const switchyard::Error& e) {
    CHECK(e.status() == SY_ERR_INVALID_ARGUMENT);
  }
}
