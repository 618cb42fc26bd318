// One normalization step (forward, then backward) with its buffers, bound through the
// Runtime. One rank: norms have no tensor parallelism.
#ifndef SWITCHYARD_CONFORMANCE_NORM_STEP_HPP
#define SWITCHYARD_CONFORMANCE_NORM_STEP_HPP

#include <memory>
#include <optional>
#include <vector>

#include "case.hpp"
#include "check_helpers.hpp"
#include "norm_case.hpp"
#include "norm_data.hpp"
#include "tensor_buffer.hpp"

namespace switchyard::conformance {

class NormStep {
 public:
  struct Outputs {
    std::vector<double> y, residual_out, mean, rstd, dx, dgamma, dbeta;
  };
  // What backward is given in place of the forward's outputs.
  struct BackwardInputs {
    std::vector<double> x_or_y, mean, rstd;
  };

  NormStep(const Runtime& runtime, const NormSpec& spec, const NormData& data);

  CallError forward();
  CallError backward(const BackwardInputs& in);
  Outputs outputs() const;

  // What a training step passes to backward: its own forward outputs.
  BackwardInputs own_backward_inputs() const;

  // Inputs unchanged; nothing written outside the outputs' elements.
  void check_forward_buffers(Failures& failures) const;
  void check_backward_buffers(Failures& failures) const;

 private:
  std::unique_ptr<TensorBuffer> make(const char* name, DLDataType dtype, std::vector<int64_t> shape,
                                     int64_t stride = 0) const;
  int64_t stride() const { return spec_.strided ? padded_stride(spec_.hidden) : 0; }
  std::unique_ptr<TensorBuffer> input_matrix(const char* name, DLDataType dtype,
                                             const std::vector<double>& values) const;
  std::unique_ptr<TensorBuffer> input_vector(const char* name, DLDataType dtype,
                                             const std::vector<double>& values) const;
  std::unique_ptr<TensorBuffer> output_matrix(const char* name, DLDataType dtype) const;
  std::unique_ptr<TensorBuffer> output_vector(const char* name, DLDataType dtype, int64_t n) const;
  void refresh_workspace();
  void synchronize() const;

  const NormSpec& spec_;
  const NormData& data_;
  sy_norm_problem problem_{};
  std::optional<Norm> op_;
  std::unique_ptr<TensorBuffer> workspace_, x_, residual_, weight_, bias_, y_, residual_out_, mean_,
      rstd_, dy_, x_or_y_, mean_in_, rstd_in_, d_residual_out_, dx_, dweight_, dbias_;
};

}  // namespace switchyard::conformance

#endif
