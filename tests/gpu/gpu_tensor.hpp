// Tensors on a GPU for the GPU checks: a cudaMalloc'd DLTensor ([rows] or [rows, cols] with a
// row stride) filled from and read back to doubles, with NaN poison in the padding; plus the
// deterministic random numbers and comparisons the checks share.
#ifndef SWITCHYARD_TESTS_GPU_GPU_TENSOR_HPP
#define SWITCHYARD_TESTS_GPU_GPU_TENSOR_HPP

#include "device_buffer.hpp"

#include <switchyard/conformance/compare.hpp>

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gpu_test {

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kBF16{kDLBfloat, 16, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

bool same_dtype(DLDataType a, DLDataType b);
const char* short_name(DLDataType d);  // "f32", "bf16", "f16", "i32", "i64"

// splitmix64: the same numbers on every rank and every run.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  explicit Random(const std::string& name);  // seeded from the name
  uint64_t next();
  double uniform(double low, double high);
  int64_t integer(int64_t low, int64_t high_exclusive);

 private:
  uint64_t state_;
};

class GpuTensor {
 public:
  // cols == 0: 1-D [rows]. row_stride (>= cols) in elements; 0 = compact.
  GpuTensor(DLDataType dtype, int64_t rows, int64_t cols, int64_t row_stride, int32_t device);
  GpuTensor(const GpuTensor&) = delete;
  GpuTensor& operator=(const GpuTensor&) = delete;

  DLTensor* dl() { return &tensor_; }
  const DLTensor* dl() const { return &tensor_; }
  DLDataType dtype() const { return dtype_; }

  // Every slot (padding included) = poison, then the logical elements from `values`
  // (row-major; empty: poison only).
  void fill(const std::vector<double>& values, double poison);
  std::vector<double> values() const;
  std::vector<unsigned char> bytes() const { return memory_.download(); }
  // The padding slots still hold NaN.
  bool padding_untouched() const;

 private:
  size_t slot(int64_t i, int64_t j) const;

  DLDataType dtype_{};
  int64_t rows_ = 0, cols_ = 0, stride_ = 0;
  int64_t shape_[2]{};
  int64_t strides_[2]{};
  DeviceBuffer memory_;
  DLTensor tensor_{};
};

// Columns [start, start + width) of a row-major [rows, total] matrix.
std::vector<double> columns(const std::vector<double>& m, int64_t rows, int64_t total,
                            int64_t start, int64_t width);
double max_abs(const std::vector<double>& v);
// Values as stored in `dtype` (round to nearest even).
std::vector<double> rounded(const std::vector<double>& v, DLDataType dtype);

// Collected failures of one check, compared with the conformance suite's tolerances.
class Failures {
 public:
  void add(const std::string& what) { list_.push_back(what); }
  void compare(const std::string& name, const std::vector<double>& got,
               const std::vector<double>& expected,
               const switchyard::conformance::Tolerance& tolerance, int64_t cols,
               const std::vector<double>* scale = nullptr);
  // Bit-identical (NaN equal to NaN).
  void same_bits(const std::string& name, const std::vector<double>& a,
                 const std::vector<double>& b);
  bool empty() const { return list_.empty(); }
  std::string text() const;

 private:
  std::vector<std::string> list_;
};

}  // namespace gpu_test

#endif
