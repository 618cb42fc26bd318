// Host memory laid out like the tensors a kernel sees: [rows, cols] with a row stride and a
// chosen misalignment (to drive the element-by-element access path), or a vector.
#ifndef SWITCHYARD_TESTS_APEX_HOST_TENSOR_HPP
#define SWITCHYARD_TESTS_APEX_HOST_TENSOR_HPP

#include <dlpack/dlpack.h>

#include <cstdint>
#include <vector>

namespace apex_test {

class HostTensor {
 public:
  HostTensor() = default;
  // row_stride 0 = compact. misalign_bytes shifts the first element off a 16-byte boundary.
  HostTensor(DLDataType dtype, int64_t rows, int64_t cols, int64_t row_stride = 0,
             int64_t misalign_bytes = 0);
  static HostTensor vector(DLDataType dtype, int64_t n) { return HostTensor(dtype, 1, n); }

  void* data() { return base_; }
  const void* data() const { return base_; }
  int64_t stride() const { return stride_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  DLDataType dtype() const { return dtype_; }
  bool aligned16() const;  // every row starts on a 16-byte boundary

  double get(int64_t i, int64_t j) const;
  void set(int64_t i, int64_t j, double value);  // rounded to the dtype (nearest even)
  std::vector<double> values() const;            // row-major, logical elements
  void fill(const std::vector<double>& values);  // row-major
  void poison();                                 // NaN everywhere, padding included
  bool same_bits(const HostTensor& other) const; // logical elements only
  // True when nothing outside the logical elements differs from NaN poison.
  bool padding_untouched() const;

 private:
  char* element(int64_t i, int64_t j) const;
  DLDataType dtype_{kDLFloat, 32, 1};
  int64_t rows_ = 0, cols_ = 0, stride_ = 0;
  std::vector<char> storage_;
  char* base_ = nullptr;
};

}  // namespace apex_test

#endif
