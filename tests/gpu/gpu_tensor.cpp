#include "gpu_tensor.hpp"

#include <switchyard/float16.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gpu_test {
namespace {

namespace conf = switchyard::conformance;

size_t element_bytes(DLDataType d) { return d.bits / 8; }

void put(std::vector<unsigned char>& bytes, size_t k, DLDataType dtype, double value) {
  unsigned char* at = bytes.data() + k * element_bytes(dtype);
  if (same_dtype(dtype, kF32)) {
    const float f = static_cast<float>(value);
    std::memcpy(at, &f, 4);
  } else if (same_dtype(dtype, kBF16)) {
    const uint16_t h = sy::float_to_bf16(static_cast<float>(value));
    std::memcpy(at, &h, 2);
  } else if (same_dtype(dtype, kF16)) {
    const uint16_t h = sy::float_to_f16(static_cast<float>(value));
    std::memcpy(at, &h, 2);
  } else if (same_dtype(dtype, kI64)) {
    const int64_t x = static_cast<int64_t>(value);
    std::memcpy(at, &x, 8);
  } else {
    const int32_t x = static_cast<int32_t>(value);
    std::memcpy(at, &x, 4);
  }
}

double get(const std::vector<unsigned char>& bytes, size_t k, DLDataType dtype) {
  const unsigned char* at = bytes.data() + k * element_bytes(dtype);
  if (same_dtype(dtype, kF32)) {
    float f;
    std::memcpy(&f, at, 4);
    return f;
  }
  if (same_dtype(dtype, kBF16) || same_dtype(dtype, kF16)) {
    uint16_t h;
    std::memcpy(&h, at, 2);
    return same_dtype(dtype, kBF16) ? sy::bf16_to_float(h) : sy::f16_to_float(h);
  }
  if (same_dtype(dtype, kI64)) {
    int64_t x;
    std::memcpy(&x, at, 8);
    return static_cast<double>(x);
  }
  int32_t x;
  std::memcpy(&x, at, 4);
  return x;
}

}  // namespace

bool same_dtype(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits; }

const char* short_name(DLDataType d) {
  if (same_dtype(d, kF32)) return "f32";
  if (same_dtype(d, kBF16)) return "bf16";
  if (same_dtype(d, kF16)) return "f16";
  if (same_dtype(d, kI32)) return "i32";
  if (same_dtype(d, kI64)) return "i64";
  return "?";
}

Random::Random(const std::string& name) : state_(1469598103934665603ull) {
  for (unsigned char ch : name) state_ = (state_ ^ ch) * 1099511628211ull;
}

uint64_t Random::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Random::uniform(double low, double high) {
  return low + (high - low) * static_cast<double>(next() >> 11) * 0x1.0p-53;
}

int64_t Random::integer(int64_t low, int64_t high_exclusive) {
  return low + static_cast<int64_t>(next() % static_cast<uint64_t>(high_exclusive - low));
}

GpuTensor::GpuTensor(DLDataType dtype, int64_t rows, int64_t cols, int64_t row_stride,
                     int32_t device)
    : dtype_(dtype), rows_(rows), cols_(cols),
      stride_(cols == 0 ? 1 : std::max(row_stride, cols)),
      memory_(static_cast<size_t>(std::max<int64_t>(1, rows * stride_)) * element_bytes(dtype)) {
  shape_[0] = rows;
  shape_[1] = cols;
  strides_[0] = stride_;
  strides_[1] = 1;
  tensor_.data = memory_.data();
  tensor_.device = DLDevice{kDLCUDA, device};
  tensor_.ndim = cols == 0 ? 1 : 2;
  tensor_.dtype = dtype;
  tensor_.shape = shape_;
  tensor_.strides = cols != 0 && stride_ != cols ? strides_ : nullptr;
  tensor_.byte_offset = 0;
}

size_t GpuTensor::slot(int64_t i, int64_t j) const {
  return static_cast<size_t>(cols_ == 0 ? i : i * stride_ + j);
}

void GpuTensor::fill(const std::vector<double>& values, double poison) {
  std::vector<unsigned char> bytes(memory_.bytes());
  const size_t slots = memory_.bytes() / element_bytes(dtype_);
  for (size_t k = 0; k < slots; ++k) put(bytes, k, dtype_, poison);
  const int64_t width = cols_ == 0 ? 1 : cols_;
  if (!values.empty())
    for (int64_t i = 0; i < rows_; ++i)
      for (int64_t j = 0; j < width; ++j) put(bytes, slot(i, j), dtype_, values[i * width + j]);
  memory_.upload(bytes);
}

std::vector<double> GpuTensor::values() const {
  const std::vector<unsigned char> bytes = memory_.download();
  const int64_t width = cols_ == 0 ? 1 : cols_;
  std::vector<double> out;
  out.reserve(static_cast<size_t>(rows_ * width));
  for (int64_t i = 0; i < rows_; ++i)
    for (int64_t j = 0; j < width; ++j) out.push_back(get(bytes, slot(i, j), dtype_));
  return out;
}

bool GpuTensor::padding_untouched() const {
  if (cols_ == 0 || stride_ == cols_) return true;
  const std::vector<unsigned char> bytes = memory_.download();
  for (int64_t i = 0; i + 1 < rows_; ++i)
    for (int64_t j = cols_; j < stride_; ++j)
      if (!std::isnan(get(bytes, slot(i, j), dtype_))) return false;
  return true;
}

std::vector<double> columns(const std::vector<double>& m, int64_t rows, int64_t total,
                            int64_t start, int64_t width) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(rows * width));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < width; ++j) out.push_back(m[i * total + start + j]);
  return out;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

std::vector<double> rounded(const std::vector<double>& v, DLDataType dtype) {
  std::vector<double> out(v.size());
  for (size_t k = 0; k < v.size(); ++k) out[k] = conf::round_to_dtype(v[k], dtype);
  return out;
}

void Failures::compare(const std::string& name, const std::vector<double>& got,
                       const std::vector<double>& expected, const conf::Tolerance& tolerance,
                       int64_t cols, const std::vector<double>* scale) {
  if (got.size() != expected.size()) {
    add(name + ": " + std::to_string(got.size()) + " values, expected " +
        std::to_string(expected.size()));
    return;
  }
  if (auto m = conf::find_mismatch(got, expected, tolerance, scale))
    add(conf::describe_mismatch(name, *m, cols));
}

void Failures::same_bits(const std::string& name, const std::vector<double>& a,
                         const std::vector<double>& b) {
  if (a.size() != b.size()) {
    add(name + ": sizes differ");
    return;
  }
  for (size_t k = 0; k < a.size(); ++k) {
    const bool equal = std::memcmp(&a[k], &b[k], sizeof(double)) == 0 ||
                       (std::isnan(a[k]) && std::isnan(b[k]));
    if (!equal) {
      add(name + " differs at [" + std::to_string(k) + "]: " + std::to_string(a[k]) + " vs " +
          std::to_string(b[k]));
      return;
    }
  }
}

std::string Failures::text() const {
  std::string out;
  for (const std::string& f : list_) out += (out.empty() ? "" : "; ") + f;
  return out;
}

}  // namespace gpu_test
