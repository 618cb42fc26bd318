#include "norm_validate.hpp"

#include "norm_plan.hpp"
#include "tensor_checks.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cmath>
#include <string>

namespace switchyard::te {
namespace {

constexpr uint32_t kKnownFlags = SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_RESIDUAL |
                                 SY_NORM_MEMORY_EFFICIENT | SY_NORM_ACCUMULATE_GRAD_WEIGHT;

std::string str(int64_t v) { return std::to_string(v); }

[[noreturn]] void invalid(const std::string& message) {
  sy::fail(SY_ERR_INVALID_ARGUMENT, message);
}

void check_data_dtype(DLDataType dtype, const char* field) {
  if (sy::dtype_bit(dtype) == 0)
    sy::fail(SY_ERR_UNSUPPORTED, std::string("problem.") + field + " = " + sy::dtype_name(dtype) +
                                     " is not supported by te; supported: float32, bfloat16, "
                                     "float16");
}

bool has(const sy_norm_problem& p, uint32_t flag) { return (p.flags & flag) != 0; }
std::string kind(const sy_norm_problem& p) { return norm_kind_name(p.kind); }

void check_parameters(const sy_norm_problem& p, const DLTensor* weight, const DLTensor* bias) {
  const int64_t h = p.hidden;
  if (p.kind == SY_NORM_L2) {
    if (weight != nullptr)
      invalid("weight is set but problem.kind = L2Norm has no gamma; pass weight = NULL "
              "(or use SY_NORM_RMS for a learned scale)");
  } else {
    if (weight == nullptr)
      invalid("weight is NULL but problem.kind = " + kind(p) + " needs gamma [" + str(h) + "]");
    sy::check_tensor(weight, "weight", p.weight_dtype, p.device, {h});
    require_element_aligned(weight, "weight");
  }
  if (bias != nullptr) {
    if (p.kind != SY_NORM_LAYER)
      invalid("bias is set but problem.kind = " + kind(p) +
              " has no beta; pass bias = NULL (or use SY_NORM_LAYER)");
    sy::check_tensor(bias, "bias", p.weight_dtype, p.device, {h});
    require_element_aligned(bias, "bias");
  }
}

void check_flagged(const DLTensor* t, const char* name, bool flag_set, const char* flag,
                   bool required_with_flag) {
  if (flag_set && required_with_flag && t == nullptr)
    invalid(std::string(name) + " is NULL but problem.flags has " + flag);
  if (!flag_set && t != nullptr)
    invalid(std::string(name) + " is set but problem.flags lacks " + flag +
            "; set the flag or pass " + name + " = NULL");
}

void check_matrix(const DLTensor* t, const char* name, DLDataType dtype, const sy_norm_problem& p) {
  sy::check_tensor(t, name, dtype, p.device, {p.rows, p.hidden});
  require_element_aligned(t, name);
}

void check_vector(const DLTensor* t, const char* name, const sy_norm_problem& p) {
  sy::check_tensor(t, name, sy::kF32, p.device, {p.rows});
  require_element_aligned(t, name);
}

}  // namespace

const char* norm_kind_name(sy_norm_kind kind) {
  switch (kind) {
    case SY_NORM_LAYER: return "LayerNorm";
    case SY_NORM_RMS: return "RMSNorm";
    case SY_NORM_L2: return "L2Norm";
    default: return "unknown";
  }
}

void validate_norm_problem(const sy_norm_problem* problem) {
  if (problem == nullptr) invalid("problem is NULL");
  require_struct_size(problem->struct_size, sizeof(sy_norm_problem), "problem");
  const sy_norm_problem& p = *problem;
  if (p.kind != SY_NORM_LAYER && p.kind != SY_NORM_RMS && p.kind != SY_NORM_L2)
    invalid("problem.kind = " + str(p.kind) +
            " is not SY_NORM_LAYER (0), SY_NORM_RMS (1) or SY_NORM_L2 (2)");
  if (p.rows < 0) invalid("problem.rows = " + str(p.rows) + " must be >= 0");
  if (p.hidden < 1) invalid("problem.hidden = " + str(p.hidden) + " must be >= 1");
  if (!(p.eps > 0.0f) || !std::isfinite(p.eps))
    invalid("problem.eps = " + real(p.eps) + " must be a finite number > 0 (typically 1e-5 or 1e-6)");
  if (p.sm_margin < 0)
    invalid("problem.sm_margin = " + str(p.sm_margin) +
            " must be >= 0 (the number of multiprocessors to leave free)");
  check_data_dtype(p.x_dtype, "x_dtype");
  check_data_dtype(p.y_dtype, "y_dtype");
  if (p.kind != SY_NORM_L2) {
    check_data_dtype(p.weight_dtype, "weight_dtype");
    check_data_dtype(p.grad_weight_dtype, "grad_weight_dtype");
    if (has(p, SY_NORM_ACCUMULATE_GRAD_WEIGHT) && !sy::same(p.grad_weight_dtype, sy::kF32))
      invalid("problem.grad_weight_dtype = " + sy::dtype_name(p.grad_weight_dtype) +
              " but SY_NORM_ACCUMULATE_GRAD_WEIGHT accumulates into float32 buffers; use "
              "float32 or clear the flag");
  }
  if ((p.flags & ~kKnownFlags) != 0)
    sy::fail(SY_ERR_UNSUPPORTED,
             "problem.flags has bits " + hex(p.flags & ~kKnownFlags) +
                 " that te does not know; it supports SY_NORM_ZERO_CENTERED_GAMMA | "
                 "SY_NORM_RESIDUAL | SY_NORM_MEMORY_EFFICIENT | SY_NORM_ACCUMULATE_GRAD_WEIGHT (" +
                 hex(kKnownFlags) + ")");
  if (p.device.device_type != kDLCUDA)
    sy::fail(SY_ERR_UNSUPPORTED, "problem.device = " + sy::device_name(p.device) +
                                     ": te runs on CUDA tensors only (cuda:N); use native for "
                                     "CPU tensors");
  if (p.hidden > kNormMaxHidden)
    sy::fail(SY_ERR_UNSUPPORTED,
             "problem.hidden = " + str(p.hidden) + " exceeds te's limit of " +
                 str(kNormMaxHidden) +
                 " (a row is kept in the registers of at most 512 threads); use apex or native "
                 "for wider rows");
}

const sy_norm_problem& norm_problem_of(const sy_norm_forward_args* args) {
  if (args == nullptr) invalid("args is NULL");
  require_struct_size(args->struct_size, sizeof(sy_norm_forward_args), "args");
  if (args->problem == nullptr) invalid("args.problem is NULL");
  return *args->problem;
}

const sy_norm_problem& norm_problem_of(const sy_norm_backward_args* args) {
  if (args == nullptr) invalid("args is NULL");
  require_struct_size(args->struct_size, sizeof(sy_norm_backward_args), "args");
  if (args->problem == nullptr) invalid("args.problem is NULL");
  return *args->problem;
}

void validate_norm_forward(const sy_norm_forward_args& args) {
  const sy_norm_problem& p = *args.problem;
  const int64_t n = p.rows;
  const bool residual = has(p, SY_NORM_RESIDUAL);
  check_matrix(args.x, "x", p.x_dtype, p);
  check_flagged(args.residual, "residual", residual, "SY_NORM_RESIDUAL", true);
  check_flagged(args.residual_out, "residual_out", residual, "SY_NORM_RESIDUAL", true);
  if (residual) {
    check_matrix(args.residual, "residual", p.x_dtype, p);
    check_matrix(args.residual_out, "residual_out", p.x_dtype, p);
  }
  check_parameters(p, args.weight, args.bias);
  check_matrix(args.y, "y", p.y_dtype, p);
  if (p.kind == SY_NORM_LAYER) {
    if (args.mean == nullptr)
      invalid("mean is NULL but LayerNorm writes the row means (float32 [" + str(n) +
              "], needed by the backward)");
    check_vector(args.mean, "mean", p);
  }
  if (args.rstd == nullptr)
    invalid("rstd is NULL but " + kind(p) +
            " writes the reciprocal standard deviations (float32 [" + str(n) +
            "], needed by the backward)");
  check_vector(args.rstd, "rstd", p);
  require_same_or_disjoint(args.y, "y", args.x, "x");
  require_same_or_disjoint(args.residual_out, "residual_out", args.x, "x");
  require_same_or_disjoint(args.residual_out, "residual_out", args.residual, "residual");
  require_same_or_disjoint(args.y, "y", args.residual, "residual");
  require_disjoint(args.y, "y", args.residual_out, "residual_out");
}

void validate_norm_backward(const sy_norm_backward_args& args, int64_t required_workspace_bytes) {
  const sy_norm_problem& p = *args.problem;
  const int64_t n = p.rows;
  const int64_t h = p.hidden;
  const bool memory_efficient = has(p, SY_NORM_MEMORY_EFFICIENT);
  check_matrix(args.dy, "dy", p.y_dtype, p);
  check_matrix(args.x_or_y, "x_or_y", memory_efficient ? p.y_dtype : p.x_dtype, p);
  check_parameters(p, args.weight, args.bias);
  if (p.kind == SY_NORM_LAYER && !memory_efficient) {
    if (args.mean == nullptr)
      invalid("mean is NULL but the LayerNorm backward needs the row means the forward wrote "
              "(float32 [" + str(n) + "])");
    check_vector(args.mean, "mean", p);
  }
  if (args.rstd == nullptr)
    invalid("rstd is NULL but the " + kind(p) +
            " backward needs the rstd the forward wrote (float32 [" + str(n) + "])");
  check_vector(args.rstd, "rstd", p);
  check_flagged(args.d_residual_out, "d_residual_out", has(p, SY_NORM_RESIDUAL),
                "SY_NORM_RESIDUAL", false);
  if (args.d_residual_out != nullptr) check_matrix(args.d_residual_out, "d_residual_out", p.x_dtype, p);
  check_matrix(args.dx, "dx", p.x_dtype, p);
  if (args.dweight != nullptr) {
    if (p.kind == SY_NORM_L2)
      invalid("dweight is set but problem.kind = L2Norm has no gamma; pass dweight = NULL");
    sy::check_tensor(args.dweight, "dweight", p.grad_weight_dtype, p.device, {h});
    require_element_aligned(args.dweight, "dweight");
  }
  if (args.dbias != nullptr) {
    if (p.kind != SY_NORM_LAYER)
      invalid("dbias is set but problem.kind = " + kind(p) + " has no beta; pass dbias = NULL");
    sy::check_tensor(args.dbias, "dbias", p.grad_weight_dtype, p.device, {h});
    require_element_aligned(args.dbias, "dbias");
  }
  require_disjoint(args.dweight, "dweight", args.dbias, "dbias");
  require_same_or_disjoint(args.dx, "dx", args.dy, "dy");
  require_same_or_disjoint(args.dx, "dx", args.x_or_y, "x_or_y");
  require_same_or_disjoint(args.dx, "dx", args.d_residual_out, "d_residual_out");
  require_workspace(args.workspace, args.workspace_bytes, required_workspace_bytes);
}

}  // namespace switchyard::te
