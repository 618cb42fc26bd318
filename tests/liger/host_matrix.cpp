#include "host_matrix.hpp"

#include <switchyard/float16.hpp>

#include <cstring>

namespace liger_test {

double round_to(lg::Dt dtype, double value) {
  const float f = static_cast<float>(value);
  switch (dtype) {
    case lg::Dt::BF16: return sy::bf16_to_float(sy::float_to_bf16(f));
    case lg::Dt::F16: return sy::f16_to_float(sy::float_to_f16(f));
    default: return f;
  }
}

HostMatrix::HostMatrix(lg::Dt dtype, int64_t rows, int64_t cols, int64_t row_stride,
                       int64_t misalign_bytes)
    : dtype_(dtype), rows_(rows), cols_(cols), stride_(row_stride != 0 ? row_stride : cols) {
  const int64_t bytes = (rows > 0 ? (rows - 1) * stride_ + cols : 0) * lg::dt_bytes(dtype);
  storage_.assign(static_cast<size_t>((bytes + misalign_bytes + 64) / 8 + 1), 0);
  char* start = reinterpret_cast<char*>(storage_.data());
  const auto address = reinterpret_cast<uintptr_t>(start);
  base_ = start + (16 - address % 16) % 16 + misalign_bytes;
  poison();
}

bool HostMatrix::aligned() const {
  if (reinterpret_cast<uintptr_t>(base_) % 16 != 0) return false;
  return rows_ <= 1 || (stride_ * lg::dt_bytes(dtype_)) % 16 == 0;
}

double HostMatrix::get(int64_t i, int64_t j) const {
  const int64_t k = i * stride_ + j;
  switch (dtype_) {
    case lg::Dt::F32: {
      float f;
      std::memcpy(&f, base_ + k * 4, 4);
      return f;
    }
    case lg::Dt::BF16: {
      uint16_t h;
      std::memcpy(&h, base_ + k * 2, 2);
      return sy::bf16_to_float(h);
    }
    default: {
      uint16_t h;
      std::memcpy(&h, base_ + k * 2, 2);
      return sy::f16_to_float(h);
    }
  }
}

void HostMatrix::set(int64_t i, int64_t j, double value) {
  const int64_t k = i * stride_ + j;
  const float f = static_cast<float>(value);
  switch (dtype_) {
    case lg::Dt::F32: std::memcpy(base_ + k * 4, &f, 4); break;
    case lg::Dt::BF16: {
      const uint16_t h = sy::float_to_bf16(f);
      std::memcpy(base_ + k * 2, &h, 2);
      break;
    }
    default: {
      const uint16_t h = sy::float_to_f16(f);
      std::memcpy(base_ + k * 2, &h, 2);
      break;
    }
  }
}

void HostMatrix::fill(const std::vector<double>& row_major) {
  for (int64_t i = 0; i < rows_; ++i)
    for (int64_t j = 0; j < cols_; ++j) set(i, j, row_major[i * cols_ + j]);
}

std::vector<double> HostMatrix::values() const {
  std::vector<double> out(static_cast<size_t>(rows_ * cols_));
  for (int64_t i = 0; i < rows_; ++i)
    for (int64_t j = 0; j < cols_; ++j) out[i * cols_ + j] = get(i, j);
  return out;
}

void HostMatrix::poison() {
  std::memset(storage_.data(), 0xff, storage_.size() * 8);
}

bool HostMatrix::same_bits(const HostMatrix& other) const {
  const int64_t bytes = lg::dt_bytes(dtype_);
  if (other.rows_ != rows_ || other.cols_ != cols_ || other.dtype_ != dtype_) return false;
  for (int64_t i = 0; i < rows_; ++i)
    if (std::memcmp(base_ + i * stride_ * bytes, other.base_ + i * other.stride_ * bytes,
                    static_cast<size_t>(cols_ * bytes)) != 0)
      return false;
  return true;
}

}  // namespace liger_test
