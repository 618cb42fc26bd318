// Host buffers in the plugin's layouts for the emulated kernels: a [rows, cols] matrix of
// float32/bfloat16/float16 with a row stride and a byte offset from a 16-byte boundary (to
// force the kernels' unaligned path), values set from and read back as double.
#ifndef SWITCHYARD_TESTS_LIGER_HOST_MATRIX_HPP
#define SWITCHYARD_TESTS_LIGER_HOST_MATRIX_HPP

#include "kernels/launch.hpp"

#include <cstdint>
#include <vector>

namespace liger_test {

namespace lg = switchyard::liger;

class HostMatrix {
 public:
  HostMatrix(lg::Dt dtype, int64_t rows, int64_t cols, int64_t row_stride = 0,
             int64_t misalign_bytes = 0);
  HostMatrix(const HostMatrix&) = delete;  // data() points into the storage
  HostMatrix& operator=(const HostMatrix&) = delete;
  HostMatrix(HostMatrix&&) = default;
  HostMatrix& operator=(HostMatrix&&) = default;
  void* data() { return base_; }
  const void* data() const { return base_; }
  int64_t stride() const { return stride_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  lg::Dt dtype() const { return dtype_; }
  bool aligned() const;  // as the plugin's aligned16()

  double get(int64_t i, int64_t j) const;
  void set(int64_t i, int64_t j, double value);  // rounded to the dtype
  void fill(const std::vector<double>& row_major);
  std::vector<double> values() const;            // row-major, logical elements
  void poison();                                 // all bytes 0xff (NaN), padding included
  bool same_bits(const HostMatrix& other) const;

 private:
  lg::Dt dtype_;
  int64_t rows_, cols_, stride_;
  std::vector<uint64_t> storage_;
  char* base_ = nullptr;
};

// The value a double takes once stored in `dtype`.
double round_to(lg::Dt dtype, double value);

}  // namespace liger_test

#endif
