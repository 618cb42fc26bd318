// A dense, row-major, owning buffer on a Device, viewable as a DLTensor for the plugins.
#ifndef SWITCHYARD_LM_HEAD_TENSOR_HPP
#define SWITCHYARD_LM_HEAD_TENSOR_HPP

#include <switchyard/lm_head/device.hpp>

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace switchyard::lm_head {

inline constexpr DLDataType kFloat32{kDLFloat, 32, 1};
inline constexpr DLDataType kFloat64{kDLFloat, 64, 1};
inline constexpr DLDataType kInt64{kDLInt, 64, 1};

class Tensor {
 public:
  Tensor() = default;
  Tensor(const Device& device, DLDataType dtype, std::vector<int64_t> shape);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  template <class T>
  T* data() const { return static_cast<T*>(storage_.get()); }
  int64_t numel() const;
  size_t bytes() const;
  const std::vector<int64_t>& shape() const { return shape_; }
  bool empty() const { return storage_ == nullptr; }

  // A borrowed view (compact strides), valid while this tensor lives and is not moved from.
  DLTensor dl() const;

 private:
  std::shared_ptr<void> storage_;
  DLDataType dtype_{kDLFloat, 32, 1};
  DLDevice device_{kDLCPU, 0};
  std::vector<int64_t> shape_;
};

// A trainable tensor and its gradient, as the model hands them to an optimizer.
struct Parameter {
  const char* name;  // "embedding", "norm.weight", "norm.bias", "projection"
  Tensor* value;
  Tensor* grad;
};

}  // namespace switchyard::lm_head

#endif
