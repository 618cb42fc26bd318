#include "norm_step.hpp"

#include <algorithm>

#include "check_helpers.hpp"
#include "device_memory.hpp"
#include "rank_calls.hpp"

namespace switchyard::conformance {
namespace {

void remember_and_upload(std::unique_ptr<TensorBuffer>& b) {
  if (!b) return;
  b->remember();
  b->upload();
}

DLTensor* tensor(const std::unique_ptr<TensorBuffer>& b) { return b ? b->tensor() : nullptr; }

void report_change(Failures& failures, const std::string& who,
                   const std::unique_ptr<TensorBuffer>& b, bool elements) {
  if (!b) return;
  if (auto where = b->changed(elements))
    failures.add(who + "wrote into " + b->name() + " at " + *where);
}

}  // namespace

NormStep::NormStep(const Runtime& runtime, const NormSpec& spec, const NormData& data)
    : spec_(spec), data_(data) {
  problem_.struct_size = sizeof problem_;
  problem_.kind = spec.kind;
  problem_.rows = data.rows;
  problem_.hidden = spec.hidden;
  problem_.eps = spec.eps;
  problem_.x_dtype = spec.x_dtype;
  problem_.y_dtype = spec.y_dtype;
  problem_.weight_dtype = spec.weight_dtype;
  problem_.grad_weight_dtype = spec.grad_weight_dtype;
  problem_.device = spec.device;
  problem_.flags = spec.flags;
  problem_.sm_margin = spec.sm_margin;
  op_.emplace(bind_operator<Norm>([&] { return runtime.norm(problem_); }, spec.declared));
  const int64_t workspace_bytes = op_->workspace_size();
  workspace_ = make("workspace", kU8, {std::max<int64_t>(workspace_bytes, 0)});
}

CallError NormStep::forward() {
  const bool residual = has_flag(spec_.flags, SY_NORM_RESIDUAL);
  x_ = input_matrix("x", spec_.x_dtype, data_.x);
  if (residual) residual_ = input_matrix("residual", spec_.x_dtype, data_.residual);
  if (with_gamma(spec_)) weight_ = input_vector("weight", spec_.weight_dtype, data_.gamma);
  if (with_beta(spec_)) bias_ = input_vector("bias", spec_.weight_dtype, data_.beta);
  y_ = output_matrix("y", spec_.y_dtype);
  if (residual) residual_out_ = output_matrix("residual_out", spec_.x_dtype);
  if (layer(spec_)) mean_ = output_vector("mean", kF32, data_.rows);
  rstd_ = output_vector("rstd", kF32, data_.rows);
  refresh_workspace();

  sy_norm_forward_args a{};
  a.struct_size = sizeof a;
  a.problem = &problem_;
  a.x = x_->tensor();
  a.residual = tensor(residual_);
  a.weight = tensor(weight_);
  a.bias = tensor(bias_);
  a.y = y_->tensor();
  a.residual_out = tensor(residual_out_);
  a.mean = tensor(mean_);
  a.rstd = rstd_->tensor();
  a.workspace = workspace_->address();
  a.workspace_bytes = workspace_->size();
  a.stream = nullptr;
  const CallError error = invoke([&] {
    op_->forward(a);
    synchronize();
  });
  for (auto* b : {&x_, &residual_, &weight_, &bias_, &y_, &residual_out_, &mean_, &rstd_})
    if (*b) (*b)->download();
  return error;
}

CallError NormStep::backward(const BackwardInputs& in) {
  const bool memory_efficient = has_flag(spec_.flags, SY_NORM_MEMORY_EFFICIENT);
  const bool accumulate = has_flag(spec_.flags, SY_NORM_ACCUMULATE_GRAD_WEIGHT);
  dy_ = input_matrix("dy", spec_.y_dtype, data_.dy);
  x_or_y_ = input_matrix(memory_efficient ? "y (x_or_y)" : "x_or_y",
                         memory_efficient ? spec_.y_dtype : spec_.x_dtype, in.x_or_y);
  if (layer(spec_)) mean_in_ = input_vector("mean", kF32, in.mean);
  rstd_in_ = input_vector("rstd", kF32, in.rstd);
  if (has_flag(spec_.flags, SY_NORM_RESIDUAL))
    d_residual_out_ = input_matrix("d_residual_out", spec_.x_dtype, data_.d_residual_out);
  dx_ = output_matrix("dx", spec_.x_dtype);
  if (with_gamma(spec_))
    dweight_ = accumulate ? input_vector("dweight", spec_.grad_weight_dtype, data_.dgamma_initial)
                          : output_vector("dweight", spec_.grad_weight_dtype, spec_.hidden);
  if (with_beta(spec_))
    dbias_ = accumulate ? input_vector("dbias", spec_.grad_weight_dtype, data_.dbeta_initial)
                        : output_vector("dbias", spec_.grad_weight_dtype, spec_.hidden);
  for (auto* b : {&weight_, &bias_}) remember_and_upload(*b);
  refresh_workspace();

  sy_norm_backward_args a{};
  a.struct_size = sizeof a;
  a.problem = &problem_;
  a.dy = dy_->tensor();
  a.x_or_y = x_or_y_->tensor();
  a.weight = tensor(weight_);
  a.bias = tensor(bias_);
  a.mean = tensor(mean_in_);
  a.rstd = rstd_in_->tensor();
  a.d_residual_out = tensor(d_residual_out_);
  a.dx = dx_->tensor();
  a.dweight = tensor(dweight_);
  a.dbias = tensor(dbias_);
  a.workspace = workspace_->address();
  a.workspace_bytes = workspace_->size();
  a.stream = nullptr;
  const CallError error = invoke([&] {
    op_->backward(a);
    synchronize();
  });
  for (auto* b : {&dy_, &x_or_y_, &weight_, &bias_, &mean_in_, &rstd_in_, &d_residual_out_, &dx_,
                  &dweight_, &dbias_})
    if (*b) (*b)->download();
  return error;
}

NormStep::Outputs NormStep::outputs() const {
  Outputs o;
  auto values = [](const std::unique_ptr<TensorBuffer>& b) {
    return b ? b->values() : std::vector<double>{};
  };
  o.y = values(y_);
  o.residual_out = values(residual_out_);
  o.mean = values(mean_);
  o.rstd = values(rstd_);
  o.dx = values(dx_);
  o.dgamma = values(dweight_);
  o.dbeta = values(dbias_);
  return o;
}

NormStep::BackwardInputs NormStep::own_backward_inputs() const {
  BackwardInputs in;
  if (has_flag(spec_.flags, SY_NORM_MEMORY_EFFICIENT))
    in.x_or_y = y_->values();
  else if (has_flag(spec_.flags, SY_NORM_RESIDUAL))
    in.x_or_y = residual_out_->values();
  else
    in.x_or_y = data_.x;
  if (mean_) in.mean = mean_->values();
  in.rstd = rstd_->values();
  return in;
}

void NormStep::check_forward_buffers(Failures& failures) const {
  for (const auto* b : {&x_, &residual_, &weight_, &bias_})
    report_change(failures, "forward ", *b, true);
  for (const auto* b : {&y_, &residual_out_, &mean_, &rstd_})
    report_change(failures, "forward ", *b, false);
}

void NormStep::check_backward_buffers(Failures& failures) const {
  for (const auto* b : {&dy_, &x_or_y_, &weight_, &bias_, &mean_in_, &rstd_in_, &d_residual_out_})
    report_change(failures, "backward ", *b, true);
  for (const auto* b : {&dx_, &dweight_, &dbias_}) report_change(failures, "backward ", *b, false);
}

std::unique_ptr<TensorBuffer> NormStep::make(const char* name, DLDataType dtype,
                                             std::vector<int64_t> shape, int64_t stride) const {
  return std::make_unique<TensorBuffer>(name, spec_.device, dtype, std::move(shape), stride);
}

std::unique_ptr<TensorBuffer> NormStep::input_matrix(const char* name, DLDataType dtype,
                                                     const std::vector<double>& values) const {
  auto b = make(name, dtype, {data_.rows, spec_.hidden}, stride());
  b->poison();  // padding stays NaN
  for (int64_t k = 0; k < data_.rows * spec_.hidden; ++k) b->set(k, values[k]);
  b->remember();
  b->upload();
  return b;
}

std::unique_ptr<TensorBuffer> NormStep::input_vector(const char* name, DLDataType dtype,
                                                     const std::vector<double>& values) const {
  auto b = make(name, dtype, {static_cast<int64_t>(values.size())});
  for (size_t k = 0; k < values.size(); ++k) b->set(static_cast<int64_t>(k), values[k]);
  b->remember();
  b->upload();
  return b;
}

std::unique_ptr<TensorBuffer> NormStep::output_matrix(const char* name, DLDataType dtype) const {
  auto b = make(name, dtype, {data_.rows, spec_.hidden}, stride());
  b->poison();
  b->remember();
  b->upload();
  return b;
}

std::unique_ptr<TensorBuffer> NormStep::output_vector(const char* name, DLDataType dtype,
                                                      int64_t n) const {
  auto b = make(name, dtype, {n});
  b->poison();
  b->remember();
  b->upload();
  return b;
}

void NormStep::refresh_workspace() {
  workspace_->poison();
  workspace_->upload();
}

void NormStep::synchronize() const {
  if (spec_.device.device_type == kDLCUDA) CudaRuntime::instance().synchronize(nullptr);
}

}  // namespace switchyard::conformance
