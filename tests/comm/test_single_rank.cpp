// SingleRankComm: the size-1 communicator copies send to recv (nothing when in place).
#include <doctest/doctest.h>

#include <switchyard/comm.hpp>

#include "comm_cuda_pointer.hpp"
#include "comm_test_support.hpp"

#include <string>
#include <vector>

using namespace comm_test;
using switchyard::SingleRankComm;

namespace {
bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("single rank: the table says rank 0 of 1 on the given device") {
  SingleRankComm cpu;
  const sy_comm* comm = cpu.get();
  CHECK(comm->struct_size == sizeof(sy_comm));
  CHECK(comm->rank == 0);
  CHECK(comm->size == 1);
  CHECK(comm->device.device_type == kDLCPU);
  SingleRankComm cuda(DLDevice{kDLCUDA, 3});
  CHECK(cuda.get()->device.device_type == kDLCUDA);
  CHECK(cuda.get()->device.device_id == 3);
}

TEST_CASE("single rank: all_reduce and all_gather copy out of place, leave in place alone") {
  SingleRankComm single;
  const sy_comm* comm = single.get();
  std::mt19937_64 rng(5);
  for (sy_reduce_op op : {SY_REDUCE_SUM, SY_REDUCE_MAX, SY_REDUCE_MIN}) {
    const std::vector<float> input = random_floats(rng, 100);
    std::vector<float> out(100, 0.0f);
    sy_error err = fresh_error();
    CHECK(comm->all_reduce(comm->ctx, input.data(), out.data(), 100, kF32, op, nullptr, &err) ==
          SY_OK);
    CHECK(err.status == SY_OK);
    CHECK(std::string(err.message).empty());
    CHECK(out == input);
  }
  std::vector<int64_t> ints = random_ints(rng, 33, 1000);
  const std::vector<int64_t> before = ints;
  CHECK(comm->all_reduce(comm->ctx, ints.data(), ints.data(), 33, kI64, SY_REDUCE_SUM, nullptr,
                         nullptr) == SY_OK);
  CHECK(ints == before);

  std::vector<uint16_t> halves{0x3c00, 0x4000, 0xc000}, gathered(3, 0);
  CHECK(comm->all_gather(comm->ctx, halves.data(), gathered.data(), 3, kBF16, nullptr,
                         nullptr) == SY_OK);
  CHECK(gathered == halves);
  CHECK(single.collectives() == 5);
}

TEST_CASE("single rank: errors name the argument") {
  SingleRankComm single;
  const sy_comm* comm = single.get();
  std::vector<float> buffer(4, 1.0f);
  sy_error err = fresh_error();
  CHECK(comm->all_reduce(comm->ctx, buffer.data(), nullptr, 4, kF32, SY_REDUCE_SUM, nullptr,
                         &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(err.message) ==
        "single-rank communicator rank 0: all_reduce: recv is NULL; expected a host buffer of 4 "
        "float32 elements.");
  err = fresh_error();
  CHECK(comm->all_gather(comm->ctx, buffer.data(), buffer.data(), 4, kU8, nullptr, &err) ==
        SY_ERR_UNSUPPORTED);
  CHECK(contains(err.message, "all_gather: dtype uint8 is not supported"));
  err = fresh_error();
  CHECK(comm->all_gather(comm->ctx, buffer.data(), buffer.data(), -1, kF32, nullptr, &err) ==
        SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "count_per_rank is -1; expected a count >= 0."));
  CHECK(single.collectives() == 3);
}

namespace {
const void* fake_device_buffer = nullptr;
bool pretend_device(const void* pointer) { return pointer == fake_device_buffer; }
}  // namespace

TEST_CASE("single rank: CUDA buffers on a CPU communicator are refused") {
  std::vector<float> stand_in(4, 0.0f), host(4, 1.0f);
  fake_device_buffer = stand_in.data();
  switchyard::detail::set_cuda_pointer_classifier_for_testing(&pretend_device);
  SingleRankComm single;
  sy_error err = fresh_error();
  const sy_status status = single.get()->all_reduce(single.get()->ctx, stand_in.data(),
                                                    host.data(), 4, kF32, SY_REDUCE_SUM,
                                                    nullptr, &err);
  switchyard::detail::set_cuda_pointer_classifier_for_testing(nullptr);
  CHECK(status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "send is CUDA device memory, but the single-rank communicator "
                              "handles CPU buffers; use libswitchyard-nccl for CUDA"));
  CHECK(host == std::vector<float>(4, 1.0f));
}

TEST_CASE("single rank on a CUDA device: in place is a no-op, a copy is refused") {
  SingleRankComm single(DLDevice{kDLCUDA, 0});
  const sy_comm* comm = single.get();
  // Never dereferenced: the core must not touch device memory.
  auto* device_a = reinterpret_cast<void*>(uintptr_t{0x1000});
  auto* device_b = reinterpret_cast<void*>(uintptr_t{0x2000});
  sy_error err = fresh_error();
  CHECK(comm->all_reduce(comm->ctx, device_a, device_a, 16, kBF16, SY_REDUCE_SUM, nullptr,
                         &err) == SY_OK);
  err = fresh_error();
  CHECK(comm->all_gather(comm->ctx, device_a, device_b, 16, kBF16, nullptr, &err) ==
        SY_ERR_UNSUPPORTED);
  CHECK(contains(err.message, "single-rank communicator on cuda:0: all_gather: send"));
  CHECK(contains(err.message, "Call it in place (send == recv), or use libswitchyard-nccl"));
  CHECK(single.collectives() == 2);
}
