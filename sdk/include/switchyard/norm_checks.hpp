// The normalization rules of the ABI (norm.h, DESIGN.md §3.9), checked the same way by every
// plugin: what a problem must be to mean anything, and which tensors a call must pass with
// which dtype and shape. Header-only, for plugin authors. Each check throws sy::Failure (caught
// by sy::guarded) with a sentence naming the argument, what was given and what is expected.
//
// The ABI's choices: L2Norm has no gamma or beta (weight, bias, dweight and dbias must be
// NULL); RMSNorm has no beta; LayerNorm's bias is optional; mean is written by LayerNorm only
// and read by its backward unless SY_NORM_MEMORY_EFFICIENT; residual and residual_out come
// with SY_NORM_RESIDUAL and only with it; d_residual_out is optional with it.
//
// What stays with each plugin: the flags, devices and sizes it serves beyond these rules, any
// aliasing rule stricter than check_norm_*_aliasing (see <switchyard/tensor_layout.hpp>), and
// its workspace.
#ifndef SWITCHYARD_NORM_CHECKS_HPP
#define SWITCHYARD_NORM_CHECKS_HPP

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/tensor_layout.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace sy {

// Every normalization request flag of ABI v1.0.
constexpr uint32_t kNormKnownFlags = SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_RESIDUAL |
                                     SY_NORM_MEMORY_EFFICIENT | SY_NORM_ACCUMULATE_GRAD_WEIGHT;

// "LayerNorm", "RMSNorm", "L2Norm" ("unknown" for anything else).
inline const char* norm_kind_name(sy_norm_kind kind) {
  switch (kind) {
    case SY_NORM_LAYER: return "LayerNorm";
    case SY_NORM_RMS: return "RMSNorm";
    case SY_NORM_L2: return "L2Norm";
    default: return "unknown";
  }
}

// The args struct and its problem pointer, before anything else is read.
inline const sy_norm_problem& norm_problem_of(const sy_norm_forward_args* args) {
  if (args == nullptr) fail(SY_ERR_INVALID_ARGUMENT, "args is NULL");
  require_struct_size(args->struct_size, sizeof(sy_norm_forward_args), "args");
  if (args->problem == nullptr) fail(SY_ERR_INVALID_ARGUMENT, "args.problem is NULL");
  return *args->problem;
}

inline const sy_norm_problem& norm_problem_of(const sy_norm_backward_args* args) {
  if (args == nullptr) fail(SY_ERR_INVALID_ARGUMENT, "args is NULL");
  require_struct_size(args->struct_size, sizeof(sy_norm_backward_args), "args");
  if (args->problem == nullptr) fail(SY_ERR_INVALID_ARGUMENT, "args.problem is NULL");
  return *args->problem;
}

// The problem alone: kind, sizes, eps, sm_margin and the accumulation dtype
// (SY_ERR_INVALID_ARGUMENT: a request that cannot mean anything), and data dtypes other than
// float32, bfloat16 and float16 (SY_ERR_UNSUPPORTED, naming `plugin`). Flags, devices and
// limits are the plugin's to check after this.
inline void check_norm_problem(const sy_norm_problem* problem, const char* plugin) {
  const auto str = [](int64_t v) { return std::to_string(v); };
  if (problem == nullptr) invalid_argument("problem is NULL");
  require_struct_size(problem->struct_size, sizeof(sy_norm_problem), "problem");
  const sy_norm_problem& p = *problem;
  if (p.kind != SY_NORM_LAYER && p.kind != SY_NORM_RMS && p.kind != SY_NORM_L2)
    invalid_argument("problem.kind = " + str(p.kind) +
                     " is not SY_NORM_LAYER (0), SY_NORM_RMS (1) or SY_NORM_L2 (2)");
  if (p.rows < 0) invalid_argument("problem.rows = " + str(p.rows) + " must be >= 0");
  if (p.hidden < 1) invalid_argument("problem.hidden = " + str(p.hidden) + " must be >= 1");
  if (!(p.eps > 0.0f) || !std::isfinite(p.eps))
    invalid_argument("problem.eps = " + float_text(p.eps) +
                     " must be a finite number > 0 (typically 1e-5 or 1e-6)");
  if (p.sm_margin < 0)
    invalid_argument("problem.sm_margin = " + str(p.sm_margin) +
                     " must be >= 0 (the number of multiprocessors to leave free)");
  require_data_dtype(p.x_dtype, "x_dtype", plugin);
  require_data_dtype(p.y_dtype, "y_dtype", plugin);
  if (p.kind != SY_NORM_L2) {
    require_data_dtype(p.weight_dtype, "weight_dtype", plugin);
    require_data_dtype(p.grad_weight_dtype, "grad_weight_dtype", plugin);
    if ((p.flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0 && !same(p.grad_weight_dtype, kF32))
      invalid_argument("problem.grad_weight_dtype = " + dtype_name(p.grad_weight_dtype) +
                       " but SY_NORM_ACCUMULATE_GRAD_WEIGHT accumulates into float32 buffers; use "
                       "float32 or clear the flag");
  }
}

// SY_ERR_UNSUPPORTED for flag bits outside ABI v1.0's, which `plugin` cannot know.
inline void require_known_norm_flags(uint32_t flags, const char* plugin) {
  if ((flags & ~kNormKnownFlags) != 0)
    fail(SY_ERR_UNSUPPORTED, "problem.flags has bits " + hex_text(flags & ~kNormKnownFlags) +
                                 " that " + plugin +
                                 " does not know; it supports SY_NORM_ZERO_CENTERED_GAMMA | "
                                 "SY_NORM_RESIDUAL | SY_NORM_MEMORY_EFFICIENT | "
                                 "SY_NORM_ACCUMULATE_GRAD_WEIGHT (" +
                                 hex_text(kNormKnownFlags) + ")");
}

namespace norm_detail {

// weight and bias, the same in forward and backward.
inline void check_parameters(const TensorChecker& check, const sy_norm_problem& p,
                             const DLTensor* weight, const DLTensor* bias) {
  const std::string kind = norm_kind_name(p.kind);
  if (p.kind == SY_NORM_L2) {
    if (weight != nullptr)
      invalid_argument(
          "weight is set but problem.kind = L2Norm has no gamma; pass weight = NULL "
          "(or use SY_NORM_RMS for a learned scale)");
  } else {
    if (weight == nullptr)
      invalid_argument("weight is NULL but problem.kind = " + kind + " needs gamma [" +
                       std::to_string(p.hidden) + "]");
    check(weight, "weight", p.weight_dtype, {p.hidden});
  }
  if (bias != nullptr) {
    if (p.kind != SY_NORM_LAYER)
      invalid_argument("bias is set but problem.kind = " + kind +
                       " has no beta; pass bias = NULL (or use SY_NORM_LAYER)");
    check(bias, "bias", p.weight_dtype, {p.hidden});
  }
}

// A tensor that a flag requires, or that must be NULL without it.
inline void check_flagged(const DLTensor* t, const char* name, bool flag_set, const char* flag,
                          bool required_with_flag) {
  if (flag_set && required_with_flag && t == nullptr)
    invalid_argument(std::string(name) + " is NULL but problem.flags has " + flag);
  if (!flag_set && t != nullptr)
    invalid_argument(std::string(name) + " is set but problem.flags lacks " + flag +
                     "; set the flag or pass " + name + " = NULL");
}

}  // namespace norm_detail

// Forward tensors (after check_norm_problem): x, residual and residual_out (with
// SY_NORM_RESIDUAL), weight and bias (by kind), y, mean (LayerNorm) and rstd. `extra`, when
// set, runs on each of them after sy::check_tensor.
inline void check_norm_forward_tensors(const sy_norm_forward_args& args,
                                       TensorRule extra = nullptr) {
  const sy_norm_problem& p = *args.problem;
  const TensorChecker check(p.device, extra);
  const int64_t n = p.rows;
  const int64_t h = p.hidden;
  const bool residual = (p.flags & SY_NORM_RESIDUAL) != 0;
  check(args.x, "x", p.x_dtype, {n, h});
  norm_detail::check_flagged(args.residual, "residual", residual, "SY_NORM_RESIDUAL", true);
  norm_detail::check_flagged(args.residual_out, "residual_out", residual, "SY_NORM_RESIDUAL", true);
  if (residual) {
    check(args.residual, "residual", p.x_dtype, {n, h});
    check(args.residual_out, "residual_out", p.x_dtype, {n, h});
  }
  norm_detail::check_parameters(check, p, args.weight, args.bias);
  check(args.y, "y", p.y_dtype, {n, h});
  if (p.kind == SY_NORM_LAYER) {
    if (args.mean == nullptr)
      invalid_argument("mean is NULL but LayerNorm writes the row means (float32 [" +
                       std::to_string(n) + "], needed by the backward)");
    check(args.mean, "mean", kF32, {n});
  }
  if (args.rstd == nullptr)
    invalid_argument(std::string("rstd is NULL but ") + norm_kind_name(p.kind) +
                     " writes the reciprocal standard deviations (float32 [" + std::to_string(n) +
                     "], needed by the backward)");
  check(args.rstd, "rstd", kF32, {n});
}

// Backward tensors (after check_norm_problem): dy, x_or_y (y's dtype with
// SY_NORM_MEMORY_EFFICIENT), weight and bias (by kind), mean (LayerNorm unless memory
// efficient), rstd, d_residual_out (optional, SY_NORM_RESIDUAL only), dx, dweight and dbias
// (optional, by kind).
inline void check_norm_backward_tensors(const sy_norm_backward_args& args,
                                        TensorRule extra = nullptr) {
  const sy_norm_problem& p = *args.problem;
  const TensorChecker check(p.device, extra);
  const int64_t n = p.rows;
  const int64_t h = p.hidden;
  const std::string kind = norm_kind_name(p.kind);
  const bool memory_efficient = (p.flags & SY_NORM_MEMORY_EFFICIENT) != 0;
  check(args.dy, "dy", p.y_dtype, {n, h});
  check(args.x_or_y, "x_or_y", memory_efficient ? p.y_dtype : p.x_dtype, {n, h});
  norm_detail::check_parameters(check, p, args.weight, args.bias);
  if (p.kind == SY_NORM_LAYER && !memory_efficient) {
    if (args.mean == nullptr)
      invalid_argument(
          "mean is NULL but the LayerNorm backward needs the row means the forward wrote "
          "(float32 [" + std::to_string(n) + "])");
    check(args.mean, "mean", kF32, {n});
  }
  if (args.rstd == nullptr)
    invalid_argument("rstd is NULL but the " + kind +
                     " backward needs the rstd the forward wrote (float32 [" + std::to_string(n) +
                     "])");
  check(args.rstd, "rstd", kF32, {n});
  norm_detail::check_flagged(args.d_residual_out, "d_residual_out",
                             (p.flags & SY_NORM_RESIDUAL) != 0, "SY_NORM_RESIDUAL", false);
  if (args.d_residual_out != nullptr)
    check(args.d_residual_out, "d_residual_out", p.x_dtype, {n, h});
  check(args.dx, "dx", p.x_dtype, {n, h});
  if (args.dweight != nullptr) {
    if (p.kind == SY_NORM_L2)
      invalid_argument(
          "dweight is set but problem.kind = L2Norm has no gamma; pass dweight = NULL");
    check(args.dweight, "dweight", p.grad_weight_dtype, {h});
  }
  if (args.dbias != nullptr) {
    if (p.kind != SY_NORM_LAYER)
      invalid_argument("dbias is set but problem.kind = " + kind +
                       " has no beta; pass dbias = NULL");
    check(args.dbias, "dbias", p.grad_weight_dtype, {h});
  }
}

// The in-place rules most plugins follow: y may be x, residual_out may be x or residual, dx may
// be dy, x_or_y or d_residual_out (the very same tensor), or else share no memory with it; y
// and residual_out, dweight and dbias are outputs that never share memory. A plugin with
// stricter rules checks its own.
inline void check_norm_forward_aliasing(const sy_norm_forward_args& args) {
  require_same_or_disjoint(args.y, "y", args.x, "x");
  require_same_or_disjoint(args.residual_out, "residual_out", args.x, "x");
  require_same_or_disjoint(args.residual_out, "residual_out", args.residual, "residual");
  require_disjoint(args.y, "y", args.residual_out, "residual_out");
}

inline void check_norm_backward_aliasing(const sy_norm_backward_args& args) {
  require_disjoint(args.dweight, "dweight", args.dbias, "dbias");
  require_same_or_disjoint(args.dx, "dx", args.dy, "dy");
  require_same_or_disjoint(args.dx, "dx", args.x_or_y, "x_or_y");
  require_same_or_disjoint(args.dx, "dx", args.d_residual_out, "d_residual_out");
}

}  // namespace sy

#endif  // SWITCHYARD_NORM_CHECKS_HPP
