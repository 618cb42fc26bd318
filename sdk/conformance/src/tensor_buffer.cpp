#include "tensor_buffer.hpp"

#include <cstring>
#include <stdexcept>
#include <utility>

#include "device_memory.hpp"
#include "dtype_codec.hpp"

namespace switchyard::conformance {
namespace {

// Bytes before and after the data. 64 keeps the data as aligned as a fresh allocation.
constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuardByte = 0xa5;

bool on_cuda(DLDevice device) { return device.device_type == kDLCUDA; }

}  // namespace

TensorBuffer::TensorBuffer(std::string name, DLDevice device, DLDataType dtype,
                           std::vector<int64_t> shape, int64_t row_stride)
    : name_(std::move(name)),
      device_(device),
      shape_(std::move(shape)),
      element_size_(element_bytes(dtype)) {
  if (shape_.empty() || shape_.size() > 2)
    throw std::logic_error("TensorBuffer " + name_ + ": only 1-D and 2-D tensors");
  row_stride_ = shape_.size() == 2 && row_stride > 0 ? row_stride : cols();
  if (row_stride_ < cols()) throw std::logic_error("TensorBuffer " + name_ + ": row stride < cols");
  const int64_t span = rows() > 0 ? (rows() - 1) * row_stride_ + cols() : 0;
  payload_bytes_ = static_cast<size_t>(span) * element_size_;
  host_.assign(kGuardBytes + payload_bytes_ + kGuardBytes, kGuardByte);

  if (on_cuda(device_)) {
    device_data_ = CudaRuntime::instance().allocate(host_.size());
  } else {
    device_data_ = host_.data();
  }
  tensor_.data = device_data_;
  tensor_.device = device_;
  tensor_.ndim = static_cast<int32_t>(shape_.size());
  tensor_.dtype = dtype;
  tensor_.shape = shape_.data();
  if (shape_.size() == 2 && row_stride_ != cols()) {
    strides_ = {row_stride_, 1};
    tensor_.strides = strides_.data();
  }
  tensor_.byte_offset = kGuardBytes;
}

TensorBuffer::~TensorBuffer() {
  if (on_cuda(device_)) CudaRuntime::instance().release(device_data_);
}

int64_t TensorBuffer::element_offset(int64_t k) const {
  return (k / cols()) * row_stride_ + k % cols();
}

unsigned char* TensorBuffer::host_element(int64_t k) {
  return host_.data() + kGuardBytes + static_cast<size_t>(element_offset(k)) * element_size_;
}

const unsigned char* TensorBuffer::host_element(int64_t k) const {
  return host_.data() + kGuardBytes + static_cast<size_t>(element_offset(k)) * element_size_;
}

double TensorBuffer::get(int64_t k) const { return load_float(host_element(k), dtype()); }
void TensorBuffer::set(int64_t k, double value) { store_float(host_element(k), dtype(), value); }
int64_t TensorBuffer::get_int(int64_t k) const { return load_int(host_element(k), dtype()); }
void TensorBuffer::set_int(int64_t k, int64_t value) { store_int(host_element(k), dtype(), value); }

std::vector<double> TensorBuffer::values() const {
  std::vector<double> out(static_cast<size_t>(size()));
  for (int64_t k = 0; k < size(); ++k) out[k] = get(k);
  return out;
}

std::vector<int64_t> TensorBuffer::ints() const {
  std::vector<int64_t> out(static_cast<size_t>(size()));
  for (int64_t k = 0; k < size(); ++k) out[k] = get_int(k);
  return out;
}

void TensorBuffer::poison() {
  std::memset(host_.data(), kGuardByte, host_.size());
  unsigned char* data = host_.data() + kGuardBytes;
  for (size_t offset = 0; offset + element_size_ <= payload_bytes_; offset += element_size_)
    store_poison(data + offset, dtype());
}

void TensorBuffer::upload() {
  if (on_cuda(device_))
    CudaRuntime::instance().copy_to_device(device_data_, host_.data(), host_.size());
}

void TensorBuffer::download() {
  if (on_cuda(device_))
    CudaRuntime::instance().copy_to_host(host_.data(), device_data_, host_.size());
}

void TensorBuffer::remember() { remembered_ = host_; }

std::optional<std::string> TensorBuffer::changed(bool elements) const {
  if (remembered_.size() != host_.size()) return std::string("(nothing remembered)");
  for (size_t b = 0; b < host_.size(); ++b) {
    if (host_[b] == remembered_[b]) continue;
    if (b < kGuardBytes)
      return "the guard bytes before the data (byte " + std::to_string(b) + " of " +
             std::to_string(kGuardBytes) + ")";
    if (b >= kGuardBytes + payload_bytes_)
      return "the guard bytes after the data (byte " +
             std::to_string(b - kGuardBytes - payload_bytes_) + ")";
    const int64_t index = static_cast<int64_t>((b - kGuardBytes) / element_size_);
    const int64_t row = index / row_stride_;
    const int64_t col = index % row_stride_;
    if (col >= cols())
      return "the padding of row " + std::to_string(row) + " (column " + std::to_string(col) +
             ", row length " + std::to_string(cols()) + ")";
    if (!elements) continue;
    return shape_.size() == 2 ? "element [" + std::to_string(row) + "," + std::to_string(col) + "]"
                              : "element [" + std::to_string(row) + "]";
  }
  return std::nullopt;
}

void* TensorBuffer::address() const {
  return static_cast<unsigned char*>(device_data_) + kGuardBytes;
}

}  // namespace switchyard::conformance
