// Running one normalization case: data, buffers, the calls, the comparisons.
#include "case.hpp"
#include "device_memory.hpp"
#include "norm_case.hpp"
#include "random_data.hpp"
#include "rank_calls.hpp"
#include "tensor_buffer.hpp"

#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_norm.hpp>

#include <cmath>
#include <memory>
#include <optional>

namespace switchyard::conformance {
namespace {

bool has(uint32_t flags, uint32_t flag) { return (flags & flag) != 0; }

int64_t padded_stride(int64_t cols) { return (cols + 1 + 7) / 8 * 8; }

bool layer(const NormSpec& s) { return s.kind == SY_NORM_LAYER; }
bool with_gamma(const NormSpec& s) { return s.kind != SY_NORM_L2; }
bool with_beta(const NormSpec& s) { return layer(s) && s.bias; }

// Inputs, each value exactly representable in the dtype of its tensor.
struct NormData {
  int64_t rows = 0;
  int64_t hidden = 0;
  std::vector<double> x, residual, gamma, beta, dy, d_residual_out, dgamma_initial, dbeta_initial;
};

std::vector<double> random_values(Random& random, int64_t count, double offset, double low,
                                  double high, DLDataType dtype) {
  std::vector<double> v(static_cast<size_t>(count));
  for (auto& value : v) value = round_to_dtype(offset + random.nonzero(low, high), dtype);
  return v;
}

NormData make_data(const NormSpec& spec) {
  Random random(spec.seed);
  NormData d;
  d.rows = spec.rows;
  d.hidden = spec.hidden;
  const int64_t h = spec.hidden;
  for (int64_t i = 0; i < d.rows; ++i) {
    // Every third row has a large mean: LayerNorm must subtract it before squaring.
    const auto row = random_values(random, h, i % 3 == 2 ? 3.0 : 0.0, 0.05, 2.0, spec.x_dtype);
    d.x.insert(d.x.end(), row.begin(), row.end());
  }
  if (has(spec.flags, SY_NORM_RESIDUAL)) {
    d.residual = random_values(random, d.rows * h, 0, 0.05, 1.0, spec.x_dtype);
    d.d_residual_out = random_values(random, d.rows * h, 0, 0.05, 1.0, spec.x_dtype);
  }
  if (with_gamma(spec)) {
    const bool zero_centered = has(spec.flags, SY_NORM_ZERO_CENTERED_GAMMA);
    d.gamma = random_values(random, h, zero_centered ? 0.0 : 1.0, 0.05, 0.5, spec.weight_dtype);
  }
  if (with_beta(spec)) d.beta = random_values(random, h, 0, 0.05, 0.5, spec.weight_dtype);
  d.dy = random_values(random, d.rows * h, 0, 0.05, 1.0, spec.y_dtype);
  if (has(spec.flags, SY_NORM_ACCUMULATE_GRAD_WEIGHT)) {
    d.dgamma_initial = random_values(random, h, 0, 0.05, 2.0, spec.grad_weight_dtype);
    d.dbeta_initial = random_values(random, h, 0, 0.05, 2.0, spec.grad_weight_dtype);
  }
  return d;
}

NormData subset(const NormData& d, int64_t begin, int64_t end) {
  NormData s = d;
  s.rows = end - begin;
  auto rows = [&](const std::vector<double>& v) {
    if (v.empty()) return v;
    return std::vector<double>(v.begin() + begin * d.hidden, v.begin() + end * d.hidden);
  };
  s.x = rows(d.x);
  s.residual = rows(d.residual);
  s.dy = rows(d.dy);
  s.d_residual_out = rows(d.d_residual_out);
  return s;
}

NormReferenceProblem reference_problem(const NormSpec& spec, int64_t rows) {
  NormReferenceProblem p;
  p.kind = spec.kind;
  p.rows = rows;
  p.hidden = spec.hidden;
  p.eps = static_cast<double>(spec.eps);  // the float the plugin sees
  p.flags = spec.flags;
  return p;
}

std::vector<double> rounded(const std::vector<double>& v, DLDataType dtype) {
  std::vector<double> out(v.size());
  for (size_t k = 0; k < v.size(); ++k) out[k] = round_to_dtype(v[k], dtype);
  return out;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::fmax(m, std::fabs(x));
  return m;
}

// The buffers and calls of one run (one rank: norms have no tensor parallelism).
class NormRun {
 public:
  struct Outputs {
    std::vector<double> y, residual_out, mean, rstd, dx, dgamma, dbeta;
  };
  // What backward is given in place of the forward's outputs.
  struct BackwardInputs {
    std::vector<double> x_or_y, mean, rstd;
  };

  NormRun(const Runtime& runtime, const NormSpec& spec, const NormData& data)
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

  CallError forward() {
    const bool residual = has(spec_.flags, SY_NORM_RESIDUAL);
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

  CallError backward(const BackwardInputs& in) {
    const bool memory_efficient = has(spec_.flags, SY_NORM_MEMORY_EFFICIENT);
    const bool accumulate = has(spec_.flags, SY_NORM_ACCUMULATE_GRAD_WEIGHT);
    dy_ = input_matrix("dy", spec_.y_dtype, data_.dy);
    x_or_y_ = input_matrix(memory_efficient ? "y (x_or_y)" : "x_or_y",
                           memory_efficient ? spec_.y_dtype : spec_.x_dtype, in.x_or_y);
    if (layer(spec_)) mean_in_ = input_vector("mean", kF32, in.mean);
    rstd_in_ = input_vector("rstd", kF32, in.rstd);
    if (has(spec_.flags, SY_NORM_RESIDUAL))
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

  Outputs outputs() const {
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

  // What a training step passes to backward: its own forward outputs.
  BackwardInputs own_backward_inputs() const {
    BackwardInputs in;
    if (has(spec_.flags, SY_NORM_MEMORY_EFFICIENT))
      in.x_or_y = y_->values();
    else if (has(spec_.flags, SY_NORM_RESIDUAL))
      in.x_or_y = residual_out_->values();
    else
      in.x_or_y = data_.x;
    if (mean_) in.mean = mean_->values();
    in.rstd = rstd_->values();
    return in;
  }

  void check_forward_buffers(Failures& failures) const {
    for (const auto* b : {&x_, &residual_, &weight_, &bias_})
      report_change(failures, "forward ", *b, true);
    for (const auto* b : {&y_, &residual_out_, &mean_, &rstd_})
      report_change(failures, "forward ", *b, false);
  }

  void check_backward_buffers(Failures& failures) const {
    for (const auto* b : {&dy_, &x_or_y_, &weight_, &bias_, &mean_in_, &rstd_in_, &d_residual_out_})
      report_change(failures, "backward ", *b, true);
    for (const auto* b : {&dx_, &dweight_, &dbias_})
      report_change(failures, "backward ", *b, false);
  }

 private:
  std::unique_ptr<TensorBuffer> make(const char* name, DLDataType dtype, std::vector<int64_t> shape,
                                     int64_t stride = 0) const {
    return std::make_unique<TensorBuffer>(name, spec_.device, dtype, std::move(shape), stride);
  }
  int64_t stride() const { return spec_.strided ? padded_stride(spec_.hidden) : 0; }

  static void remember_and_upload(std::unique_ptr<TensorBuffer>& b) {
    if (!b) return;
    b->remember();
    b->upload();
  }

  std::unique_ptr<TensorBuffer> input_matrix(const char* name, DLDataType dtype,
                                             const std::vector<double>& values) const {
    auto b = make(name, dtype, {data_.rows, spec_.hidden}, stride());
    b->poison();  // padding stays NaN
    for (int64_t k = 0; k < data_.rows * spec_.hidden; ++k) b->set(k, values[k]);
    b->remember();
    b->upload();
    return b;
  }
  std::unique_ptr<TensorBuffer> input_vector(const char* name, DLDataType dtype,
                                             const std::vector<double>& values) const {
    auto b = make(name, dtype, {static_cast<int64_t>(values.size())});
    for (size_t k = 0; k < values.size(); ++k) b->set(static_cast<int64_t>(k), values[k]);
    b->remember();
    b->upload();
    return b;
  }
  std::unique_ptr<TensorBuffer> output_matrix(const char* name, DLDataType dtype) const {
    auto b = make(name, dtype, {data_.rows, spec_.hidden}, stride());
    b->poison();
    b->remember();
    b->upload();
    return b;
  }
  std::unique_ptr<TensorBuffer> output_vector(const char* name, DLDataType dtype, int64_t n) const {
    auto b = make(name, dtype, {n});
    b->poison();
    b->remember();
    b->upload();
    return b;
  }

  void refresh_workspace() {
    workspace_->poison();
    workspace_->upload();
  }

  static DLTensor* tensor(const std::unique_ptr<TensorBuffer>& b) { return b ? b->tensor() : nullptr; }

  static void report_change(Failures& failures, const std::string& who,
                            const std::unique_ptr<TensorBuffer>& b, bool elements) {
    if (!b) return;
    if (auto where = b->changed(elements))
      failures.add(who + "wrote into " + b->name() + " at " + *where);
  }

  void synchronize() const {
    if (spec_.device.device_type == kDLCUDA) CudaRuntime::instance().synchronize(nullptr);
  }

  const NormSpec& spec_;
  const NormData& data_;
  sy_norm_problem problem_{};
  std::optional<Norm> op_;
  std::unique_ptr<TensorBuffer> workspace_, x_, residual_, weight_, bias_, y_, residual_out_, mean_,
      rstd_, dy_, x_or_y_, mean_in_, rstd_in_, d_residual_out_, dx_, dweight_, dbias_;
};

void compare(Failures& failures, const std::string& name, const std::vector<double>& got,
             const std::vector<double>& expected, const Tolerance& tolerance, int64_t columns = 0,
             const std::vector<double>* scale = nullptr) {
  if (auto m = find_mismatch(got, expected, tolerance, scale))
    failures.add(describe_mismatch(name, *m, columns));
}

std::string run_numeric(const Runtime& runtime, const NormSpec& spec) {
  const NormData data = make_data(spec);
  NormRun run(runtime, spec, data);
  fail_on_errors("forward", {run.forward()});

  const NormReferenceProblem rp = reference_problem(spec, data.rows);
  NormReferenceForwardInput fin;
  fin.x = data.x;
  fin.residual = data.residual;
  fin.gamma = data.gamma;
  fin.beta = data.beta;
  const DLDataType x_dtype = spec.x_dtype;
  fin.round_to_x_dtype = [x_dtype](double v) { return round_to_dtype(v, x_dtype); };
  const NormReferenceForward ref = reference_norm_forward(rp, fin);

  Failures failures;
  const auto out = run.outputs();
  const int64_t h = spec.hidden;
  compare(failures, "y", out.y, ref.y, elementwise_tolerance(spec.y_dtype, max_abs(ref.y)), h,
          &ref.y_magnitude);
  if (has(spec.flags, SY_NORM_RESIDUAL))
    compare(failures, "residual_out", out.residual_out, ref.h,
            elementwise_tolerance(spec.x_dtype, max_abs(ref.h)), h, &ref.h_magnitude);
  if (layer(spec)) {
    // The mean's rounding error grows with the row's magnitude, not with the mean itself.
    std::vector<double> mean_scale(static_cast<size_t>(data.rows), 0.0);
    for (int64_t i = 0; i < data.rows; ++i) {
      for (int64_t j = 0; j < h; ++j) mean_scale[i] += std::fabs(ref.h[i * h + j]);
      mean_scale[i] /= static_cast<double>(h);
    }
    compare(failures, "mean", out.mean, ref.mean, statistic_tolerance(spec.x_dtype, 0), 0, &mean_scale);
  }
  compare(failures, "rstd", out.rstd, ref.rstd, statistic_tolerance(spec.x_dtype, max_abs(ref.rstd)));
  run.check_forward_buffers(failures);

  // Backward gets the reference's h or y (in their dtypes) and fp32 statistics, so its check
  // does not depend on forward.
  NormRun::BackwardInputs bin;
  const bool memory_efficient = has(spec.flags, SY_NORM_MEMORY_EFFICIENT);
  bin.x_or_y = memory_efficient ? rounded(ref.y, spec.y_dtype) : ref.h;
  if (layer(spec)) bin.mean = rounded(ref.mean, kF32);
  bin.rstd = rounded(ref.rstd, kF32);
  fail_on_errors("backward", {run.backward(bin)});

  NormReferenceBackwardInput bref;
  bref.dy = data.dy;
  bref.x_or_y = bin.x_or_y;
  bref.gamma = data.gamma;
  bref.beta = data.beta;
  bref.mean = bin.mean;
  bref.rstd = bin.rstd;
  bref.d_residual_out = data.d_residual_out;
  bref.dgamma_initial = data.dgamma_initial;
  bref.dbeta_initial = data.dbeta_initial;
  const NormReferenceBackward grads = reference_norm_backward(rp, bref);
  const auto bout = run.outputs();
  compare(failures, "dx", bout.dx, grads.dx, elementwise_tolerance(spec.x_dtype, max_abs(grads.dx)), h,
          &grads.dx_magnitude);
  const Tolerance sum_tol = row_sum_tolerance(spec.x_dtype);
  if (with_gamma(spec)) compare(failures, "dweight", bout.dgamma, grads.dgamma, sum_tol, 0, &grads.dgamma_scale);
  if (with_beta(spec)) compare(failures, "dbias", bout.dbeta, grads.dbeta, sum_tol, 0, &grads.dbeta_scale);
  run.check_backward_buffers(failures);
  failures.throw_if_any();
  return describe_norm(spec);
}

NormRun::Outputs run_step(const Runtime& runtime, const NormSpec& spec, const NormData& data) {
  NormRun run(runtime, spec, data);
  fail_on_errors("forward", {run.forward()});
  fail_on_errors("backward", {run.backward(run.own_backward_inputs())});
  return run.outputs();
}

void compare_bits(Failures& failures, const std::string& what, const std::vector<double>& a,
                  int64_t row, const std::vector<double>& b, int64_t count, int64_t width) {
  if (a.empty() && b.empty()) return;
  const std::vector<double> slice(a.begin() + row * width, a.begin() + (row + count) * width);
  if (auto k = first_bit_difference(slice, b)) {
    const int64_t i = row + *k / width;
    const std::string index = width > 1 ? std::to_string(i) + "," + std::to_string(*k % width)
                                        : std::to_string(i);
    failures.add(what + ": [" + index + "] " + format_number(slice[*k]) + " vs " + format_number(b[*k]));
  }
}

std::string run_replay(const Runtime& runtime, const NormSpec& spec) {
  const NormData data = make_data(spec);
  const auto first = run_step(runtime, spec, data);
  const auto second = run_step(runtime, spec, data);
  Failures failures;
  const std::string p = "two identical runs differ in ";
  const int64_t n = data.rows, h = spec.hidden;
  compare_bits(failures, p + "y", first.y, 0, second.y, n, h);
  compare_bits(failures, p + "residual_out", first.residual_out, 0, second.residual_out, n, h);
  compare_bits(failures, p + "mean", first.mean, 0, second.mean, n, 1);
  compare_bits(failures, p + "rstd", first.rstd, 0, second.rstd, n, 1);
  compare_bits(failures, p + "dx", first.dx, 0, second.dx, n, h);
  compare_bits(failures, p + "dweight", first.dgamma, 0, second.dgamma, 1, h);
  compare_bits(failures, p + "dbias", first.dbeta, 0, second.dbeta, 1, h);
  failures.throw_if_any();
  return describe_norm(spec) + " (2 runs bit-identical)";
}

std::string run_batch_invariance(const Runtime& runtime, const NormSpec& spec) {
  const NormData data = make_data(spec);
  const auto full = run_step(runtime, spec, data);
  const int64_t n = data.rows, h = spec.hidden;
  const std::vector<std::pair<int64_t, int64_t>> batches{{0, 1}, {n / 2, n / 2 + 1}, {n / 3, n}};
  Failures failures;
  for (const auto& [begin, end] : batches) {
    NormSpec sub_spec = spec;
    sub_spec.rows = end - begin;
    const NormData sub_data = subset(data, begin, end);
    const auto part = run_step(runtime, sub_spec, sub_data);
    const int64_t count = end - begin;
    const std::string p = "rows " + std::to_string(begin) + ".." + std::to_string(end - 1) +
                          " computed as a batch of " + std::to_string(count) +
                          " differ from the batch of " + std::to_string(n) + " in ";
    compare_bits(failures, p + "y", full.y, begin, part.y, count, h);
    compare_bits(failures, p + "residual_out", full.residual_out, begin, part.residual_out, count, h);
    compare_bits(failures, p + "mean", full.mean, begin, part.mean, count, 1);
    compare_bits(failures, p + "rstd", full.rstd, begin, part.rstd, count, 1);
    compare_bits(failures, p + "dx", full.dx, begin, part.dx, count, h);
  }
  failures.throw_if_any();
  return describe_norm(spec) + " (rows alone and in smaller batches bit-identical; dweight excluded)";
}

const char* kind_name(sy_norm_kind kind) {
  switch (kind) {
    case SY_NORM_LAYER: return "LayerNorm";
    case SY_NORM_RMS: return "RMSNorm";
    case SY_NORM_L2: return "L2Norm";
  }
  return "?";
}

}  // namespace

std::string describe_norm(const NormSpec& spec) {
  std::string d = std::string(kind_name(spec.kind)) + " N=" + std::to_string(spec.rows) +
                  " H=" + std::to_string(spec.hidden) + " x=" + short_dtype_name(spec.x_dtype) +
                  " y=" + short_dtype_name(spec.y_dtype);
  if (with_gamma(spec))
    d += " weight=" + short_dtype_name(spec.weight_dtype) +
         " grad_weight=" + short_dtype_name(spec.grad_weight_dtype);
  if (layer(spec) && !spec.bias) d += " no-bias";
  if (has(spec.flags, SY_NORM_ZERO_CENTERED_GAMMA)) d += " zero-centered-gamma";
  if (has(spec.flags, SY_NORM_RESIDUAL)) d += " residual";
  if (has(spec.flags, SY_NORM_MEMORY_EFFICIENT)) d += " memory-efficient";
  if (has(spec.flags, SY_NORM_ACCUMULATE_GRAD_WEIGHT)) d += " accumulate";
  if (spec.strided) d += " strided";
  if (spec.sm_margin != 0) d += " sm_margin=" + std::to_string(spec.sm_margin);
  return d;
}

std::string run_norm_case(const Runtime& runtime, const NormSpec& spec) {
  switch (spec.check) {
    case NormCheck::Numeric: return run_numeric(runtime, spec);
    case NormCheck::Replay: return run_replay(runtime, spec);
    case NormCheck::BatchInvariance: return run_batch_invariance(runtime, spec);
  }
  return {};
}

}  // namespace switchyard::conformance
