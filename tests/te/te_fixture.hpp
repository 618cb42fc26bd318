// The te plugin as the tests see it: loaded once with dlopen from the build's plugin folder
// (never unloaded: the static CUDA runtime inside registers exit handlers), a host that keeps
// the log, and descriptor-only tensors on cuda:0 whose data is host memory (the refusals under
// test happen before any data is touched).
#ifndef SWITCHYARD_TESTS_TE_FIXTURE_HPP
#define SWITCHYARD_TESTS_TE_FIXTURE_HPP

#include "refusal_checks.hpp"

#include <switchyard/plugin.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace te_test {

struct Te {
  std::string path;
  const sy_plugin* plugin = nullptr;
  const sy_cross_entropy& ce() const { return *plugin->cross_entropy; }
  const sy_norm& norm() const { return *plugin->norm; }
  // probe(): status and message.
  sy_status probe(std::string* message) const;
  bool gpu_usable() const;  // probe() == SY_OK
};
const Te& te();
std::vector<std::string> logged();

// A status and message from one call.
struct Result {
  sy_status status = SY_OK;
  std::string message;
};
using switchyard::test::make_error;
Result result_of(sy_status status, const sy_error& err);

constexpr DLDevice kCuda0{kDLCUDA, 0};
constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};
constexpr DLDataType kBF16{kDLBfloat, 16, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};
constexpr DLDataType kI16{kDLInt, 16, 1};

// A DLTensor over 256-byte aligned host memory of its own (labelled with any device).
class FakeTensor {
 public:
  FakeTensor(DLDevice device, DLDataType dtype, std::vector<int64_t> shape, int64_t row_stride = 0);
  FakeTensor(const FakeTensor& other);
  FakeTensor& operator=(const FakeTensor& other);
  DLTensor* get() { return &tensor_; }
  const DLTensor* get() const { return &tensor_; }
  // A view of the same memory starting `elements` elements later (same shape and stride).
  FakeTensor shifted(int64_t elements) const;
  // The same memory seen with byte_offset added (misaligned views).
  FakeTensor with_byte_offset(uint64_t bytes) const;

 private:
  void rebind();  // tensor_.shape/strides point at this object's vectors
  std::shared_ptr<std::vector<unsigned char>> storage_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  DLTensor tensor_{};
};

sy_ce_problem ce_problem(int64_t rows, int64_t vocab, DLDataType logits = kBF16,
                         DLDevice device = kCuda0);
sy_norm_problem norm_problem(sy_norm_kind kind, int64_t rows, int64_t hidden,
                             DLDataType dtype = kBF16, DLDevice device = kCuda0);

}  // namespace te_test

#endif
