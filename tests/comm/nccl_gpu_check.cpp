// libswitchyard-nccl on real GPUs, one process, one thread per GPU: every visible GPU is a
// rank. Exits 77 (CTest: skipped) when there is no usable GPU, so CPU machines skip it.
//
// Checks: NcclComm::create_all and create_local (unique id passed as hex text), wrap of a
// caller's communicator (C API), all_reduce SUM/MAX/MIN and all_gather for float32, bfloat16
// and int64, in place and out of place, the counts, host buffers refused with a message, and
// the core's thread group refusing real device memory.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <switchyard/comm.hpp>
#include <switchyard/nccl.h>
#include <switchyard/nccl.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kBF16{kDLBfloat, 16, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Device memory for one rank, filled from and read back to the host.
struct DeviceBuffer {
  DeviceBuffer(int device, size_t bytes) : device(device), bytes(bytes) {
    cudaSetDevice(device);
    REQUIRE(cudaMalloc(&pointer, bytes) == cudaSuccess);
  }
  ~DeviceBuffer() {
    cudaSetDevice(device);
    cudaFree(pointer);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  int device;
  size_t bytes;
  void* pointer = nullptr;
};

uint16_t bf16_of_small_int(int value) {  // exact for |value| < 256
  const float f = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

// Rank r's element i: small integers, so every sum is exact in every dtype and any order.
int value_of(int rank, size_t i) { return static_cast<int>((rank * 7 + i * 3) % 23) - 11; }

// Small integers in the dtype's encoding.
std::vector<unsigned char> encode(DLDataType dtype, const std::vector<int>& values) {
  std::vector<unsigned char> out(values.size() * dtype.bits / 8);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype.code == kDLBfloat) {
      const uint16_t b = bf16_of_small_int(values[i]);
      std::memcpy(out.data() + 2 * i, &b, 2);
    } else if (dtype.code == kDLInt) {
      const int64_t x = values[i];
      std::memcpy(out.data() + 8 * i, &x, 8);
    } else {
      const float x = static_cast<float>(values[i]);
      std::memcpy(out.data() + 4 * i, &x, 4);
    }
  }
  return out;
}

std::vector<unsigned char> host_values(DLDataType dtype, int rank, size_t count) {
  std::vector<int> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = value_of(rank, i);
  return encode(dtype, values);
}

std::vector<unsigned char> expected_reduce(DLDataType dtype, sy_reduce_op op, int size,
                                           size_t count) {
  std::vector<int> result(count);
  for (size_t i = 0; i < count; ++i) {
    int acc = value_of(0, i);
    for (int r = 1; r < size; ++r) {
      const int v = value_of(r, i);
      acc = op == SY_REDUCE_SUM ? acc + v : op == SY_REDUCE_MAX ? std::max(acc, v) : std::min(acc, v);
    }
    result[i] = acc;
  }
  return encode(dtype, result);
}

// Runs every collective on every rank of `comms` and checks the values.
void check_collectives(const std::vector<const sy_comm*>& comms) {
  const int size = static_cast<int>(comms.size());
  const size_t count = 1000;
  std::vector<std::string> failures(size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      const sy_comm* comm = comms[rank];
      const int device = comm->device.device_id;
      cudaSetDevice(device);
      cudaStream_t stream;
      cudaStreamCreate(&stream);
      auto fail = [&](const std::string& what) {
        if (failures[rank].empty()) failures[rank] = what;
      };
      for (DLDataType dtype : {kF32, kBF16, kI64}) {
        const size_t bytes = count * dtype.bits / 8;
        const auto input = host_values(dtype, rank, count);
        for (bool in_place : {false, true}) {
          for (sy_reduce_op op : {SY_REDUCE_SUM, SY_REDUCE_MAX, SY_REDUCE_MIN}) {
            DeviceBuffer send(device, bytes), recv(device, bytes);
            cudaMemcpy(send.pointer, input.data(), bytes, cudaMemcpyHostToDevice);
            void* out = in_place ? send.pointer : recv.pointer;
            sy_error err{};
            err.struct_size = sizeof err;
            if (comm->all_reduce(comm->ctx, send.pointer, out, static_cast<int64_t>(count), dtype,
                                 op, stream, &err) != SY_OK) {
              fail(std::string("all_reduce: ") + err.message);
              continue;
            }
            cudaStreamSynchronize(stream);
            std::vector<unsigned char> got(bytes);
            cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost);
            if (got != expected_reduce(dtype, op, size, count)) {
              fail("all_reduce values differ: dtype bits " + std::to_string(dtype.bits) +
                   " op " + std::to_string(op) + (in_place ? " in place" : ""));
            }
          }
          // all_gather; in place means send is this rank's slot of recv.
          DeviceBuffer all(device, bytes * size), mine(device, bytes);
          char* slot = static_cast<char*>(all.pointer) + bytes * rank;
          void* send = in_place ? static_cast<void*>(slot) : mine.pointer;
          cudaMemcpy(send, input.data(), bytes, cudaMemcpyHostToDevice);
          sy_error err{};
          err.struct_size = sizeof err;
          if (comm->all_gather(comm->ctx, send, all.pointer, static_cast<int64_t>(count), dtype,
                               stream, &err) != SY_OK) {
            fail(std::string("all_gather: ") + err.message);
            continue;
          }
          cudaStreamSynchronize(stream);
          std::vector<unsigned char> got(bytes * size);
          cudaMemcpy(got.data(), all.pointer, got.size(), cudaMemcpyDeviceToHost);
          for (int r = 0; r < size; ++r) {
            const auto expected = host_values(dtype, r, count);
            if (std::memcmp(got.data() + bytes * r, expected.data(), bytes) != 0) {
              fail("all_gather slot " + std::to_string(r) + " differs" +
                   (in_place ? " (in place)" : ""));
            }
          }
        }
      }
      cudaStreamDestroy(stream);
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < size; ++rank) {
    CAPTURE(rank);
    CHECK_MESSAGE(failures[rank].empty(), failures[rank]);
  }
}

}  // namespace

TEST_CASE("nccl gpu: create_all, values, counts") {
  const int gpus = gpu_count();
  std::vector<int32_t> devices;
  for (int d = 0; d < gpus; ++d) devices.push_back(d);
  std::vector<switchyard::NcclComm> comms = switchyard::NcclComm::create_all(devices);
  REQUIRE(comms.size() == devices.size());
  std::vector<const sy_comm*> tables;
  for (auto& c : comms) tables.push_back(c.get());
  for (int r = 0; r < gpus; ++r) {
    CHECK(tables[r]->rank == r);
    CHECK(tables[r]->size == gpus);
    CHECK(tables[r]->device.device_type == kDLCUDA);
    CHECK(tables[r]->device.device_id == r);
    CHECK(comms[r].owns_native());
  }
  check_collectives(tables);
  // 3 dtypes x 2 layouts x (3 all_reduces + 1 all_gather)
  CHECK(comms[0].all_reduces() == 18);
  CHECK(comms[0].all_gathers() == 6);
  CHECK(comms[0].collectives() == 24);
  comms[0].reset_counts();
  CHECK(comms[0].collectives() == 0);
}

TEST_CASE("nccl gpu: create_local from hex text, and wrap through the C API") {
  const int gpus = gpu_count();
  const std::string hex = switchyard::NcclUniqueId::create().to_hex();
  std::vector<sy_nccl_comm*> created(gpus, nullptr);
  std::vector<std::string> errors(gpus);
  std::vector<std::thread> threads;
  for (int r = 0; r < gpus; ++r) {
    threads.emplace_back([&, r] {
      sy_error err{};
      err.struct_size = sizeof err;
      if (sy_nccl_comm_create_local(hex.c_str(), gpus, r, &created[r], &err) != SY_OK) {
        errors[r] = err.message;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < gpus; ++r) REQUIRE_MESSAGE(created[r] != nullptr, errors[r]);

  // Wrap the same native communicators (borrowed) and run through the wrappers.
  std::vector<sy_nccl_comm*> wrapped(gpus, nullptr);
  std::vector<const sy_comm*> tables;
  for (int r = 0; r < gpus; ++r) {
    sy_error err{};
    err.struct_size = sizeof err;
    REQUIRE_MESSAGE(sy_nccl_comm_wrap(sy_nccl_comm_native(created[r]), -1, &wrapped[r], &err) ==
                        SY_OK,
                    err.message);
    tables.push_back(sy_nccl_comm_get(wrapped[r]));
    CHECK(tables.back()->rank == r);
    CHECK(tables.back()->device.device_id == r);
  }
  check_collectives(tables);
  CHECK(sy_nccl_comm_collectives(wrapped[0]) == 24);
  CHECK(sy_nccl_comm_collectives(created[0]) == 0);

  // Host memory is refused with a sentence, before NCCL sees it.
  std::vector<float> host(16, 1.0f);
  sy_error err{};
  err.struct_size = sizeof err;
  const sy_comm* t0 = tables[0];
  CHECK(t0->all_reduce(t0->ctx, host.data(), host.data(), 16, kF32, SY_REDUCE_SUM, nullptr,
                       &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "send is host memory; NCCL needs CUDA device buffers on cuda:0"));

  for (auto* w : wrapped) sy_nccl_comm_destroy(w);  // borrowed: the natives live on
  for (auto* c : created) sy_nccl_comm_destroy(c);
}

TEST_CASE("nccl gpu: the core's thread group refuses real device memory") {
  DeviceBuffer device(0, 64);
  switchyard::ThreadGroup group(1);
  const sy_comm* comm = group.comm(0);
  sy_error err{};
  err.struct_size = sizeof err;
  CHECK(comm->all_reduce(comm->ctx, device.pointer, device.pointer, 16, kF32, SY_REDUCE_SUM,
                         nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "send is CUDA device memory, but the thread group handles CPU "
                              "buffers; use libswitchyard-nccl for CUDA"));
  // Pinned host memory is host memory.
  void* pinned = nullptr;
  REQUIRE(cudaMallocHost(&pinned, 64) == cudaSuccess);
  std::memset(pinned, 0, 64);
  CHECK(comm->all_reduce(comm->ctx, pinned, pinned, 16, kF32, SY_REDUCE_SUM, nullptr, &err) ==
        SY_OK);
  cudaFreeHost(pinned);
}

int main(int argc, char** argv) {
  if (gpu_count() < 1) {
    std::printf("no usable CUDA device: skipped\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
