// The suite's tensor buffers: poison, guards, padding, byte_offset, and CUDA memory (loaded
// with dlopen; on a machine without a GPU it reports why).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "device_memory.hpp"
#include "dtype_codec.hpp"
#include "tensor_buffer.hpp"

using namespace switchyard::conformance;

TEST_CASE("buffers: poison, elements and the DLTensor view") {
  TensorBuffer b("logits", DLDevice{kDLCPU, 0}, kBF16, {2, 3}, 8);
  b.poison();
  CHECK(std::isnan(b.get(0)));
  b.set(4, 1.5);
  CHECK(b.get(4) == 1.5);
  DLTensor* t = b.tensor();
  REQUIRE(t->strides != nullptr);
  CHECK(t->strides[0] == 8);
  CHECK(t->strides[1] == 1);
  CHECK(t->byte_offset > 0);  // a plugin that ignores byte_offset reads the guard
  const auto* base = static_cast<const unsigned char*>(t->data) + t->byte_offset;
  uint16_t raw;
  std::memcpy(&raw, base + (1 * 8 + 1) * 2, sizeof raw);  // element [1,1] == k 4
  CHECK(raw == 0x3fc0);                                   // 1.5 in bfloat16

  TensorBuffer labels("labels", DLDevice{kDLCPU, 0}, kI32, {3});
  labels.poison();
  CHECK(labels.get_int(2) == static_cast<int32_t>(kArgmaxPoison));
  CHECK(labels.tensor()->strides == nullptr);
}

TEST_CASE("buffers: writes outside the elements are found and located") {
  TensorBuffer b("grad", DLDevice{kDLCPU, 0}, kF32, {2, 3}, 5);
  b.poison();
  b.remember();
  CHECK_FALSE(b.changed());
  auto* base = static_cast<unsigned char*>(b.tensor()->data) + b.tensor()->byte_offset;
  base[4 * 3] = 0x55;  // row 0, column 3: padding
  auto where = b.changed(false);
  REQUIRE(where);
  CHECK(*where == "the padding of row 0 (column 3, row length 3)");
  b.remember();
  b.set(5, 2.0);
  CHECK_FALSE(b.changed(false));  // elements are allowed to change
  REQUIRE(b.changed(true));
  CHECK(*b.changed(true) == "element [1,2]");
  b.remember();
  base[(5 + 3) * 4] = 7;  // just past the last element
  REQUIRE(b.changed(false));
  CHECK(b.changed(false)->find("guard bytes after the data") != std::string::npos);
  b.remember();
  base[-1] = 7;
  CHECK(b.changed(false)->find("guard bytes before the data") != std::string::npos);
}

TEST_CASE("buffers: CUDA memory without linking CUDA") {
  const CudaRuntime& cuda = CudaRuntime::instance();
  if (!cuda.available()) {
    CHECK(cuda.reason().rfind("no CUDA device", 0) == 0);
    CHECK_THROWS_WITH(TensorBuffer("x", DLDevice{kDLCUDA, 0}, kF32, {4}),
                      doctest::Contains("no CUDA device"));
    return;
  }
  TensorBuffer b("x", DLDevice{kDLCUDA, 0}, kF16, {3, 5}, 8);
  b.poison();
  for (int64_t k = 0; k < 15; ++k) b.set(k, 0.25 * static_cast<double>(k));
  b.remember();
  b.upload();
  for (int64_t k = 0; k < 15; ++k) b.set(k, -1);
  b.download();
  CHECK_FALSE(b.changed());
  CHECK(b.get(7) == 1.75);
}
