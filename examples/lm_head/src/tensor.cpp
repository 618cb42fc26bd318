#include <switchyard/lm_head/tensor.hpp>

#include <switchyard/switchyard.hpp>

#include <string>

namespace switchyard::lm_head {

Tensor::Tensor(const Device& device, DLDataType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), device_(device.dl_device()), shape_(std::move(shape)) {
  for (int64_t extent : shape_) {
    if (extent < 0) {
      throw Error(SY_ERR_INVALID_ARGUMENT,
                  "tensor extent must be >= 0, got " + std::to_string(extent));
    }
  }
  storage_ = device.allocate(bytes());
}

int64_t Tensor::numel() const {
  int64_t count = 1;
  for (int64_t extent : shape_) count *= extent;
  return count;
}

size_t Tensor::bytes() const {
  return static_cast<size_t>(numel()) * ((dtype_.bits * dtype_.lanes + 7u) / 8u);
}

DLTensor Tensor::dl() const {
  DLTensor view{};
  view.data = storage_.get();
  view.device = device_;
  view.ndim = static_cast<int32_t>(shape_.size());
  view.dtype = dtype_;
  view.shape = const_cast<int64_t*>(shape_.data());  // DLPack's field is non-const; never written
  view.strides = nullptr;
  view.byte_offset = 0;
  return view;
}

}  // namespace switchyard::lm_head
