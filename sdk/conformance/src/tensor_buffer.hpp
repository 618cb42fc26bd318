// One tensor of a case: a host image (guard bytes, elements, row padding, guard bytes) and,
// for a CUDA case, its device copy. The DLTensor it hands out points at the device copy
// through a non-zero byte_offset (so a plugin that ignores byte_offset reads guard bytes).
#ifndef SWITCHYARD_CONFORMANCE_TENSOR_BUFFER_HPP
#define SWITCHYARD_CONFORMANCE_TENSOR_BUFFER_HPP

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::conformance {

class TensorBuffer {
 public:
  // shape {n} or {rows, cols}; row_stride (elements) >= cols, 0 for compact rows.
  TensorBuffer(std::string name, DLDevice device, DLDataType dtype, std::vector<int64_t> shape,
               int64_t row_stride = 0);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  const std::string& name() const { return name_; }
  DLDataType dtype() const { return tensor_.dtype; }
  int64_t rows() const { return shape_[0]; }
  int64_t cols() const { return shape_.size() == 2 ? shape_[1] : 1; }
  int64_t size() const { return rows() * cols(); }

  // Logical elements, row-major (k = row * cols + col), on the host image.
  double get(int64_t k) const;
  void set(int64_t k, double value);  // rounded to the dtype
  int64_t get_int(int64_t k) const;
  void set_int(int64_t k, int64_t value);
  std::vector<double> values() const;
  std::vector<int64_t> ints() const;

  // Every element and every padding element becomes poison (NaN / argmax sentinel); guard
  // bytes get their own pattern.
  void poison();
  // Copies the host image to the device (CUDA) / back; nothing on the CPU.
  void upload();
  void download();

  // Remembers the host image; changed() then tells what differs from it.
  void remember();
  // nullopt when nothing differs; otherwise where ("guard after the data", "padding of row
  // 3", "element [2,5]"). With elements == false only guards and padding are checked.
  std::optional<std::string> changed(bool elements = true) const;

  DLTensor* tensor() { return &tensor_; }
  void* address() const;  // data + byte_offset, on the device

 private:
  int64_t element_offset(int64_t k) const;  // in elements from the first element
  unsigned char* host_element(int64_t k);
  const unsigned char* host_element(int64_t k) const;

  std::string name_;
  DLDevice device_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  int64_t row_stride_;
  size_t element_size_;
  size_t payload_bytes_;
  std::vector<unsigned char> host_;
  std::vector<unsigned char> remembered_;
  void* device_data_ = nullptr;  // the CUDA allocation; host_.data() on the CPU
  DLTensor tensor_{};
};

}  // namespace switchyard::conformance

#endif
