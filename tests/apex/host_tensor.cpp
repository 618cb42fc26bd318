#include "host_tensor.hpp"

#include <switchyard/float16.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace apex_test {
namespace {

int64_t bytes_of(DLDataType t) { return t.bits / 8; }

}  // namespace

HostTensor::HostTensor(DLDataType dtype, int64_t rows, int64_t cols, int64_t row_stride,
                       int64_t misalign_bytes)
    : dtype_(dtype), rows_(rows), cols_(cols), stride_(row_stride > 0 ? row_stride : cols) {
  const int64_t bytes = (rows > 0 ? (rows - 1) * stride_ + cols : 0) * bytes_of(dtype);
  storage_.resize(static_cast<size_t>(bytes + misalign_bytes + 64));
  const uintptr_t raw = reinterpret_cast<uintptr_t>(storage_.data());
  base_ = reinterpret_cast<char*>((raw + 15) / 16 * 16 + static_cast<uintptr_t>(misalign_bytes));
  poison();
}

bool HostTensor::aligned16() const {
  return reinterpret_cast<uintptr_t>(base_) % 16 == 0 &&
         (rows_ <= 1 || (stride_ * bytes_of(dtype_)) % 16 == 0);
}

char* HostTensor::element(int64_t i, int64_t j) const {
  return base_ + (i * stride_ + j) * bytes_of(dtype_);
}

double HostTensor::get(int64_t i, int64_t j) const {
  const char* p = element(i, j);
  if (dtype_.bits == 32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return dtype_.code == kDLBfloat ? sy::bf16_to_float(h) : sy::f16_to_float(h);
}

void HostTensor::set(int64_t i, int64_t j, double value) {
  char* p = element(i, j);
  const float f = static_cast<float>(value);
  if (dtype_.bits == 32) {
    std::memcpy(p, &f, 4);
    return;
  }
  const uint16_t h = dtype_.code == kDLBfloat ? sy::float_to_bf16(f) : sy::float_to_f16(f);
  std::memcpy(p, &h, 2);
}

std::vector<double> HostTensor::values() const {
  std::vector<double> v(static_cast<size_t>(rows_ * cols_));
  for (int64_t i = 0; i < rows_; ++i)
    for (int64_t j = 0; j < cols_; ++j) v[i * cols_ + j] = get(i, j);
  return v;
}

void HostTensor::fill(const std::vector<double>& values) {
  if (static_cast<int64_t>(values.size()) != rows_ * cols_)
    throw std::invalid_argument("HostTensor::fill: wrong number of values");
  for (int64_t i = 0; i < rows_; ++i)
    for (int64_t j = 0; j < cols_; ++j) set(i, j, values[i * cols_ + j]);
}

void HostTensor::poison() {
  // 0xff bytes: NaN in float32, bfloat16 and float16 alike.
  std::memset(storage_.data(), 0xff, storage_.size());
}

bool HostTensor::same_bits(const HostTensor& other) const {
  if (rows_ != other.rows_ || cols_ != other.cols_ || dtype_.bits != other.dtype_.bits)
    return false;
  for (int64_t i = 0; i < rows_; ++i)
    if (std::memcmp(element(i, 0), other.element(i, 0),
                    static_cast<size_t>(cols_ * bytes_of(dtype_))) != 0)
      return false;
  return true;
}

bool HostTensor::padding_untouched() const {
  const char* begin = storage_.data();
  const char* end = begin + storage_.size();
  for (const char* p = begin; p < end; ++p) {
    const int64_t offset = p - base_;
    const int64_t row = offset >= 0 ? offset / (stride_ * bytes_of(dtype_)) : -1;
    const int64_t column_byte = offset >= 0 ? offset % (stride_ * bytes_of(dtype_)) : -1;
    const bool logical = offset >= 0 && row < rows_ && column_byte < cols_ * bytes_of(dtype_);
    if (!logical && static_cast<unsigned char>(*p) != 0xff) return false;
  }
  return true;
}

}  // namespace apex_test
