// A DLTensor over benchmark-owned memory, compact row-major. Holds its own shape array, so it
// is neither copied nor moved (the DLTensor points into it).
#ifndef SWITCHYARD_BENCH_TENSOR_REF_HPP
#define SWITCHYARD_BENCH_TENSOR_REF_HPP

#include <dlpack/dlpack.h>

#include <array>
#include <cstdint>
#include <initializer_list>

namespace switchyard::bench {

class TensorRef {
 public:
  TensorRef(void* data, DLDevice device, DLDataType dtype, std::initializer_list<int64_t> dims) {
    int ndim = 0;
    for (int64_t d : dims) shape_[static_cast<size_t>(ndim++)] = d;
    tensor_.data = data;
    tensor_.device = device;
    tensor_.ndim = ndim;
    tensor_.dtype = dtype;
    tensor_.shape = shape_.data();
    tensor_.strides = nullptr;  // compact row-major
    tensor_.byte_offset = 0;
  }
  TensorRef(const TensorRef&) = delete;
  TensorRef& operator=(const TensorRef&) = delete;

  DLTensor* get() { return &tensor_; }
  const DLTensor* get() const { return &tensor_; }

 private:
  std::array<int64_t, 4> shape_{};
  DLTensor tensor_{};
};

}  // namespace switchyard::bench

#endif
