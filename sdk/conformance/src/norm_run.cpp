// The checks of one normalization case: numbers against the reference, replay and batch
// invariance.
#include <cmath>
#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_norm.hpp>

#include "case.hpp"
#include "check_helpers.hpp"
#include "norm_case.hpp"
#include "norm_data.hpp"
#include "norm_step.hpp"
#include "rank_calls.hpp"

namespace switchyard::conformance {
namespace {

std::string run_numeric(const Runtime& runtime, const NormSpec& spec) {
  const NormData data = make_norm_data(spec);
  NormStep run(runtime, spec, data);
  fail_on_errors("forward", {run.forward()});

  const NormReferenceProblem rp = norm_reference_problem(spec, data.rows);
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
  compare_values(failures, "y", out.y, ref.y, elementwise_tolerance(spec.y_dtype, max_abs(ref.y)),
                 h, &ref.y_magnitude);
  if (has_flag(spec.flags, SY_NORM_RESIDUAL))
    compare_values(failures, "residual_out", out.residual_out, ref.h,
                   elementwise_tolerance(spec.x_dtype, max_abs(ref.h)), h, &ref.h_magnitude);
  if (layer(spec)) {
    // The mean's rounding error grows with the row's magnitude, not with the mean itself.
    std::vector<double> mean_scale(static_cast<size_t>(data.rows), 0.0);
    for (int64_t i = 0; i < data.rows; ++i) {
      for (int64_t j = 0; j < h; ++j) mean_scale[i] += std::fabs(ref.h[i * h + j]);
      mean_scale[i] /= static_cast<double>(h);
    }
    compare_values(failures, "mean", out.mean, ref.mean, statistic_tolerance(spec.x_dtype, 0), 0,
                   &mean_scale);
  }
  compare_values(failures, "rstd", out.rstd, ref.rstd,
                 statistic_tolerance(spec.x_dtype, max_abs(ref.rstd)), 0);
  run.check_forward_buffers(failures);

  // Backward gets the reference's h or y (in their dtypes) and fp32 statistics, so its check
  // does not depend on forward.
  NormStep::BackwardInputs bin;
  const bool memory_efficient = has_flag(spec.flags, SY_NORM_MEMORY_EFFICIENT);
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
  compare_values(failures, "dx", bout.dx, grads.dx,
                 elementwise_tolerance(spec.x_dtype, max_abs(grads.dx)), h, &grads.dx_magnitude);
  const Tolerance sum_tol = row_sum_tolerance(spec.x_dtype);
  if (with_gamma(spec))
    compare_values(failures, "dweight", bout.dgamma, grads.dgamma, sum_tol, 0, &grads.dgamma_scale);
  if (with_beta(spec))
    compare_values(failures, "dbias", bout.dbeta, grads.dbeta, sum_tol, 0, &grads.dbeta_scale);
  run.check_backward_buffers(failures);
  failures.throw_if_any();
  return describe_norm(spec);
}

NormStep::Outputs run_step(const Runtime& runtime, const NormSpec& spec, const NormData& data) {
  NormStep run(runtime, spec, data);
  fail_on_errors("forward", {run.forward()});
  fail_on_errors("backward", {run.backward(run.own_backward_inputs())});
  return run.outputs();
}

std::string run_replay(const Runtime& runtime, const NormSpec& spec) {
  const NormData data = make_norm_data(spec);
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
  const NormData data = make_norm_data(spec);
  const auto full = run_step(runtime, spec, data);
  const int64_t n = data.rows, h = spec.hidden;
  const std::vector<std::pair<int64_t, int64_t>> batches{{0, 1}, {n / 2, n / 2 + 1}, {n / 3, n}};
  Failures failures;
  for (const auto& [begin, end] : batches) {
    NormSpec sub_spec = spec;
    sub_spec.rows = end - begin;
    const NormData sub_data = norm_data_rows(data, begin, end);
    const auto part = run_step(runtime, sub_spec, sub_data);
    const int64_t count = end - begin;
    const std::string p = "rows " + std::to_string(begin) + ".." + std::to_string(end - 1) +
                          " computed as a batch of " + std::to_string(count) +
                          " differ from the batch of " + std::to_string(n) + " in ";
    compare_bits(failures, p + "y", full.y, begin, part.y, count, h);
    compare_bits(failures, p + "residual_out", full.residual_out, begin, part.residual_out, count,
                 h);
    compare_bits(failures, p + "mean", full.mean, begin, part.mean, count, 1);
    compare_bits(failures, p + "rstd", full.rstd, begin, part.rstd, count, 1);
    compare_bits(failures, p + "dx", full.dx, begin, part.dx, count, h);
  }
  failures.throw_if_any();
  return describe_norm(spec) +
         " (rows alone and in smaller batches bit-identical; dweight excluded)";
}

const char* kind_name(sy_norm_kind kind) {
  switch (kind) {
    case SY_NORM_LAYER:
      return "LayerNorm";
    case SY_NORM_RMS:
      return "RMSNorm";
    case SY_NORM_L2:
      return "L2Norm";
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
  if (has_flag(spec.flags, SY_NORM_ZERO_CENTERED_GAMMA)) d += " zero-centered-gamma";
  if (has_flag(spec.flags, SY_NORM_RESIDUAL)) d += " residual";
  if (has_flag(spec.flags, SY_NORM_MEMORY_EFFICIENT)) d += " memory-efficient";
  if (has_flag(spec.flags, SY_NORM_ACCUMULATE_GRAD_WEIGHT)) d += " accumulate";
  if (spec.strided) d += " strided";
  if (spec.sm_margin != 0) d += " sm_margin=" + std::to_string(spec.sm_margin);
  return d;
}

std::string run_norm_case(const Runtime& runtime, const NormSpec& spec) {
  switch (spec.check) {
    case NormCheck::Numeric:
      return run_numeric(runtime, spec);
    case NormCheck::Replay:
      return run_replay(runtime, spec);
    case NormCheck::BatchInvariance:
      return run_batch_invariance(runtime, spec);
  }
  return {};
}

}  // namespace switchyard::conformance
