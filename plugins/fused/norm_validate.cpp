#include "norm_validate.hpp"

#include "jit/dtype.hpp"
#include "jit/norm_source.hpp"
#include "tensor_layout.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace switchyard::fused {
namespace {

constexpr uint32_t kKnownFlags = SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_RESIDUAL |
                                 SY_NORM_MEMORY_EFFICIENT | SY_NORM_ACCUMULATE_GRAD_WEIGHT;

std::string str(int64_t v) { return std::to_string(v); }

std::string real(float v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(v));
  return buffer;
}

std::string hex(uint32_t v) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%x", v);
  return buffer;
}

[[noreturn]] void invalid(const std::string& message) { sy::fail(SY_ERR_INVALID_ARGUMENT, message); }
[[noreturn]] void unsupported(const std::string& message) { sy::fail(SY_ERR_UNSUPPORTED, message); }

void check_data_dtype(DLDataType dtype, const char* field) {
  if (!jit::dtype_of(dtype))
    unsupported(std::string("problem.") + field + " = " + sy::dtype_name(dtype) +
                " is not supported by fused; supported: float32, bfloat16, float16");
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
  }
  if (bias != nullptr) {
    if (p.kind != SY_NORM_LAYER)
      invalid("bias is set but problem.kind = " + kind(p) +
              " has no beta; pass bias = NULL (or use SY_NORM_LAYER)");
    sy::check_tensor(bias, "bias", p.weight_dtype, p.device, {h});
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
  if (p.sm_margin < 0) invalid("problem.sm_margin = " + str(p.sm_margin) + " must be >= 0");
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
    unsupported("problem.flags has bits " + hex(p.flags & ~kKnownFlags) +
                " that fused does not know; it supports SY_NORM_ZERO_CENTERED_GAMMA | "
                "SY_NORM_RESIDUAL | SY_NORM_MEMORY_EFFICIENT | SY_NORM_ACCUMULATE_GRAD_WEIGHT (" +
                hex(kKnownFlags) + ")");
  if (p.device.device_type != kDLCUDA)
    unsupported("problem.device = " + sy::device_name(p.device) +
                ": fused runs on CUDA devices only (cuda:N); use native for CPU tensors");
  if (p.device.device_id < 0)
    invalid("problem.device = " + sy::device_name(p.device) + " has a negative device id");
  if (p.hidden > jit::NormLayout::kMaxHidden)
    unsupported("problem.hidden = " + str(p.hidden) + " exceeds the " +
                str(jit::NormLayout::kMaxHidden) +
                " values fused keeps of a row in one block's registers; use native or te for "
                "wider rows");
  if (p.rows > kMaxNormRows)
    unsupported("problem.rows = " + str(p.rows) + " exceeds the " + str(kMaxNormRows) +
                " rows one call of fused handles; split the batch");
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

void validate_norm_forward(const sy_norm_forward_args* args, int64_t required_workspace_bytes) {
  const sy_norm_problem& p = norm_problem_of(args);
  const int64_t n = p.rows;
  const int64_t h = p.hidden;
  const bool residual = has(p, SY_NORM_RESIDUAL);
  sy::check_tensor(args->x, "x", p.x_dtype, p.device, {n, h});
  check_flagged(args->residual, "residual", residual, "SY_NORM_RESIDUAL", true);
  check_flagged(args->residual_out, "residual_out", residual, "SY_NORM_RESIDUAL", true);
  if (residual) {
    sy::check_tensor(args->residual, "residual", p.x_dtype, p.device, {n, h});
    sy::check_tensor(args->residual_out, "residual_out", p.x_dtype, p.device, {n, h});
  }
  check_parameters(p, args->weight, args->bias);
  sy::check_tensor(args->y, "y", p.y_dtype, p.device, {n, h});
  if (p.kind == SY_NORM_LAYER) {
    if (args->mean == nullptr)
      invalid("mean is NULL but LayerNorm writes the row means (float32 [" + str(n) +
              "], needed by the backward)");
    sy::check_tensor(args->mean, "mean", sy::kF32, p.device, {n});
  }
  if (args->rstd == nullptr)
    invalid("rstd is NULL but " + kind(p) + " writes the reciprocal standard deviations (float32 [" +
            str(n) + "], needed by the backward)");
  sy::check_tensor(args->rstd, "rstd", sy::kF32, p.device, {n});
  require_same_or_disjoint(args->y, "y", args->x, "x");
  require_same_or_disjoint(args->residual_out, "residual_out", args->x, "x");
  require_same_or_disjoint(args->residual_out, "residual_out", args->residual, "residual");
  if (args->residual_out != nullptr && overlap(*args->y, *args->residual_out) != Overlap::None)
    invalid("y overlaps residual_out; both are outputs and need their own memory");
  require_workspace(args->workspace, args->workspace_bytes, required_workspace_bytes);
}

void validate_norm_backward(const sy_norm_backward_args* args, int64_t required_workspace_bytes) {
  const sy_norm_problem& p = norm_problem_of(args);
  const int64_t n = p.rows;
  const int64_t h = p.hidden;
  const bool memory_efficient = has(p, SY_NORM_MEMORY_EFFICIENT);
  sy::check_tensor(args->dy, "dy", p.y_dtype, p.device, {n, h});
  sy::check_tensor(args->x_or_y, "x_or_y", memory_efficient ? p.y_dtype : p.x_dtype, p.device, {n, h});
  check_parameters(p, args->weight, args->bias);
  if (p.kind == SY_NORM_LAYER && !memory_efficient) {
    if (args->mean == nullptr)
      invalid("mean is NULL but the LayerNorm backward needs the row means the forward wrote "
              "(float32 [" + str(n) + "])");
    sy::check_tensor(args->mean, "mean", sy::kF32, p.device, {n});
  }
  if (args->rstd == nullptr)
    invalid("rstd is NULL but the " + kind(p) + " backward needs the rstd the forward wrote (float32 [" +
            str(n) + "])");
  sy::check_tensor(args->rstd, "rstd", sy::kF32, p.device, {n});
  check_flagged(args->d_residual_out, "d_residual_out", has(p, SY_NORM_RESIDUAL),
                "SY_NORM_RESIDUAL", false);
  if (args->d_residual_out != nullptr)
    sy::check_tensor(args->d_residual_out, "d_residual_out", p.x_dtype, p.device, {n, h});
  sy::check_tensor(args->dx, "dx", p.x_dtype, p.device, {n, h});
  if (args->dweight != nullptr) {
    if (p.kind == SY_NORM_L2)
      invalid("dweight is set but problem.kind = L2Norm has no gamma; pass dweight = NULL");
    sy::check_tensor(args->dweight, "dweight", p.grad_weight_dtype, p.device, {h});
  }
  if (args->dbias != nullptr) {
    if (p.kind != SY_NORM_LAYER)
      invalid("dbias is set but problem.kind = " + kind(p) + " has no beta; pass dbias = NULL");
    sy::check_tensor(args->dbias, "dbias", p.grad_weight_dtype, p.device, {h});
  }
  if (args->dweight != nullptr && args->dbias != nullptr &&
      overlap(*args->dweight, *args->dbias) != Overlap::None)
    invalid("dweight overlaps dbias; each needs its own memory");
  require_same_or_disjoint(args->dx, "dx", args->dy, "dy");
  require_same_or_disjoint(args->dx, "dx", args->x_or_y, "x_or_y");
  require_same_or_disjoint(args->dx, "dx", args->d_residual_out, "d_residual_out");
  require_workspace(args->workspace, args->workspace_bytes, required_workspace_bytes);
}

}  // namespace switchyard::fused
