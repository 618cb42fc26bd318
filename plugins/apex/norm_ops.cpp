#include "norm_ops.hpp"

#include "cuda_env.hpp"
#include "kernel_types.hpp"
#include "launch.hpp"
#include "plan.hpp"
#include "problem_check.hpp"
#include "tensor_rules.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <string>

namespace switchyard::apex {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  sy::fail(SY_ERR_INVALID_ARGUMENT, message);
}

std::string str(int64_t v) { return std::to_string(v); }

// γ/β presence and shape, shared by forward and backward.
void check_parameters(const Problem& p, const DLTensor* weight, const DLTensor* bias) {
  if (p.kind == NormKind::L2) {
    if (weight != nullptr)
      invalid("weight is set but problem.kind = L2Norm has no gamma; pass weight = NULL (or "
              "use SY_NORM_RMS for a learned scale)");
  } else {
    if (weight == nullptr)
      invalid(std::string("weight is NULL but problem.kind = ") + kind_name(p.kind) +
              " needs gamma [" + str(p.hidden) + "]");
    sy::check_tensor(weight, "weight", dl_dtype(p.weight_dtype), p.device, {p.hidden});
  }
  if (bias != nullptr) {
    if (p.kind != NormKind::Layer)
      invalid(std::string("bias is set but problem.kind = ") + kind_name(p.kind) +
              " has no beta; pass bias = NULL (or use SY_NORM_LAYER)");
    sy::check_tensor(bias, "bias", dl_dtype(p.weight_dtype), p.device, {p.hidden});
  }
}

void check_statistic(const DLTensor* t, const char* name, const Problem& p, const char* why) {
  if (t == nullptr)
    invalid(std::string(name) + " is NULL but " + why + " (float32 [" + str(p.rows) + "])");
  sy::check_tensor(t, name, sy::kF32, p.device, {p.rows});
}

void refuse_residual(const DLTensor* t, const char* name) {
  if (t != nullptr)
    invalid(std::string(name) +
            " is set but problem.flags lacks SY_NORM_RESIDUAL (which apex does not "
            "implement); pass " + name + " = NULL");
}

LaunchConfig launch_config(const Problem& p, void* stream) {
  LaunchConfig c;
  c.stream = stream;
  c.sm_count = sm_count(p.device.device_id);
  c.sm_margin = p.sm_margin;
  return c;
}

const sy_norm_problem* problem_of(const void* args, size_t struct_size, size_t required,
                                  const sy_norm_problem* problem, const char* what) {
  if (args == nullptr) invalid("args is NULL");
  if (struct_size < required)
    invalid(std::string("args.struct_size = ") + std::to_string(struct_size) +
            " is smaller than sizeof(" + what + ") = " + std::to_string(required) +
            " of ABI v1.0; set struct_size = sizeof(" + what + ")");
  if (problem == nullptr) invalid("args.problem is NULL");
  return problem;
}

}  // namespace

void supports(const sy_norm_problem* problem) {
  const Problem p = check_problem(problem);
  require_device(p.device);
}

int64_t workspace_size(const sy_norm_problem* problem) {
  const Problem p = check_problem(problem);
  return workspace_bytes(p.kind, p.rows, p.hidden);
}

void forward(const sy_norm_forward_args* args) {
  const Problem p = check_problem(problem_of(args, args != nullptr ? args->struct_size : 0,
                                             sizeof(sy_norm_forward_args),
                                             args != nullptr ? args->problem : nullptr,
                                             "sy_norm_forward_args"));
  const int64_t n = p.rows, h = p.hidden;
  sy::check_tensor(args->x, "x", dl_dtype(p.x_dtype), p.device, {n, h});
  refuse_residual(args->residual, "residual");
  refuse_residual(args->residual_out, "residual_out");
  check_parameters(p, args->weight, args->bias);
  sy::check_tensor(args->y, "y", dl_dtype(p.y_dtype), p.device, {n, h});
  if (p.kind == NormKind::Layer)
    check_statistic(args->mean, "mean", p, "LayerNorm writes the row means the backward needs");
  check_statistic(args->rstd, "rstd", p,
                  "the forward writes the reciprocal standard deviations the backward needs");
  require_same_or_disjoint(args->y, "y", args->x, "x");
  const DLTensor* mean = p.kind == NormKind::Layer ? args->mean : nullptr;
  require_disjoint(args->rstd, "rstd", args->y, "y");
  require_disjoint(mean, "mean", args->y, "y");
  require_disjoint(mean, "mean", args->rstd, "rstd");

  // The caller's mistakes first, then what this machine can do.
  require_device(p.device);
  const DeviceScope scope(p.device.device_id);
  require_device_tensor(args->x, "x", p.device);
  require_device_tensor(args->weight, "weight", p.device);
  require_device_tensor(args->bias, "bias", p.device);
  require_device_tensor(args->y, "y", p.device);
  require_device_tensor(mean, "mean", p.device);
  require_device_tensor(args->rstd, "rstd", p.device);

  ForwardParams f;
  f.rows = n;
  f.hidden = h;
  f.eps = p.eps;
  f.kind = p.kind;
  f.zero_centered_gamma = p.zero_centered_gamma;
  f.vector_access = h % kChunkElements == 0 && allows_16_byte_access(args->x) &&
                    allows_16_byte_access(args->y) && allows_16_byte_access(args->weight) &&
                    allows_16_byte_access(args->bias);
  f.x_dtype = p.x_dtype;
  f.y_dtype = p.y_dtype;
  f.weight_dtype = p.weight_dtype;
  f.x = address_of(*args->x);
  f.x_stride = row_stride_of(*args->x);
  f.y = address_of(*args->y);
  f.y_stride = row_stride_of(*args->y);
  f.weight = args->weight != nullptr ? address_of(*args->weight) : nullptr;
  f.bias = args->bias != nullptr ? address_of(*args->bias) : nullptr;
  f.mean = mean != nullptr ? static_cast<float*>(address_of(*args->mean)) : nullptr;
  f.rstd = static_cast<float*>(address_of(*args->rstd));

  const LaunchConfig config = launch_config(p, args->stream);
  int error = 0;
  switch (p.x_dtype) {
    case Dtype::F32: error = launch_forward_f32(f, config); break;
    case Dtype::BF16: error = launch_forward_bf16(f, config); break;
    default: error = launch_forward_f16(f, config); break;
  }
  check_cuda(error, std::string("the ") + kind_name(p.kind) + " forward kernel launch");
}

void backward(const sy_norm_backward_args* args) {
  const Problem p = check_problem(problem_of(args, args != nullptr ? args->struct_size : 0,
                                             sizeof(sy_norm_backward_args),
                                             args != nullptr ? args->problem : nullptr,
                                             "sy_norm_backward_args"));
  const int64_t n = p.rows, h = p.hidden;
  sy::check_tensor(args->dy, "dy", dl_dtype(p.y_dtype), p.device, {n, h});
  sy::check_tensor(args->x_or_y, "x_or_y", dl_dtype(p.memory_efficient ? p.y_dtype : p.x_dtype),
                   p.device, {n, h});
  check_parameters(p, args->weight, args->bias);
  const bool needs_mean = p.kind == NormKind::Layer && !p.memory_efficient;
  if (needs_mean)
    check_statistic(args->mean, "mean", p, "the LayerNorm backward needs the row means");
  check_statistic(args->rstd, "rstd", p, "the backward needs the rstd the forward wrote");
  refuse_residual(args->d_residual_out, "d_residual_out");
  sy::check_tensor(args->dx, "dx", dl_dtype(p.x_dtype), p.device, {n, h});
  if (args->dweight != nullptr) {
    if (p.kind == NormKind::L2)
      invalid("dweight is set but problem.kind = L2Norm has no gamma; pass dweight = NULL");
    sy::check_tensor(args->dweight, "dweight", dl_dtype(p.grad_weight_dtype), p.device, {h});
  }
  if (args->dbias != nullptr) {
    if (p.kind != NormKind::Layer)
      invalid(std::string("dbias is set but problem.kind = ") + kind_name(p.kind) +
              " has no beta; pass dbias = NULL");
    sy::check_tensor(args->dbias, "dbias", dl_dtype(p.grad_weight_dtype), p.device, {h});
  }
  require_disjoint(args->dweight, "dweight", args->dbias, "dbias");
  require_same_or_disjoint(args->dx, "dx", args->dy, "dy");
  require_same_or_disjoint(args->dx, "dx", args->x_or_y, "x_or_y");

  const bool partials = (args->dweight != nullptr || args->dbias != nullptr) && n > 0;
  const int64_t required = partials ? workspace_bytes(p.kind, n, h) : 0;
  if (required > 0) {
    if (args->workspace == nullptr)
      invalid("workspace is NULL but this backward needs " + str(required) +
              " bytes on " + sy::device_name(p.device) + " (workspace_size())");
    if (args->workspace_bytes < required)
      invalid("workspace_bytes = " + str(args->workspace_bytes) + " is smaller than the " +
              str(required) + " bytes workspace_size() asks for; allocate at least that much on " +
              sy::device_name(p.device));
  }

  require_device(p.device);
  const DeviceScope scope(p.device.device_id);
  require_device_tensor(args->dy, "dy", p.device);
  require_device_tensor(args->x_or_y, "x_or_y", p.device);
  require_device_tensor(args->weight, "weight", p.device);
  require_device_tensor(args->bias, "bias", p.device);
  if (needs_mean) require_device_tensor(args->mean, "mean", p.device);
  require_device_tensor(args->rstd, "rstd", p.device);
  require_device_tensor(args->dx, "dx", p.device);
  require_device_tensor(args->dweight, "dweight", p.device);
  require_device_tensor(args->dbias, "dbias", p.device);
  if (required > 0) require_device_memory(args->workspace, "workspace", p.device);

  BackwardParams b;
  b.rows = n;
  b.hidden = h;
  b.kind = p.kind;
  b.zero_centered_gamma = p.zero_centered_gamma;
  b.memory_efficient = p.memory_efficient;
  b.vector_access = h % kChunkElements == 0 && allows_16_byte_access(args->dy) &&
                    allows_16_byte_access(args->x_or_y) && allows_16_byte_access(args->dx) &&
                    allows_16_byte_access(args->weight) && allows_16_byte_access(args->bias);
  b.x_dtype = p.x_dtype;
  b.y_dtype = p.y_dtype;
  b.weight_dtype = p.weight_dtype;
  b.grad_weight_dtype = p.grad_weight_dtype;
  b.dy = address_of(*args->dy);
  b.dy_stride = row_stride_of(*args->dy);
  b.x_or_y = address_of(*args->x_or_y);
  b.x_or_y_stride = row_stride_of(*args->x_or_y);
  b.weight = args->weight != nullptr ? address_of(*args->weight) : nullptr;
  b.bias = args->bias != nullptr ? address_of(*args->bias) : nullptr;
  b.mean = needs_mean ? static_cast<const float*>(address_of(*args->mean)) : nullptr;
  b.rstd = static_cast<const float*>(address_of(*args->rstd));
  b.dx = address_of(*args->dx);
  b.dx_stride = row_stride_of(*args->dx);
  b.dweight = args->dweight != nullptr ? address_of(*args->dweight) : nullptr;
  b.dbias = args->dbias != nullptr ? address_of(*args->dbias) : nullptr;
  b.accumulate = p.accumulate;
  const RowPartition partition = row_partition(n, h);
  b.rows_per_chunk = partition.rows_per_chunk;
  b.chunks = partition.chunks;
  if (partials) {
    const uintptr_t raw = reinterpret_cast<uintptr_t>(args->workspace);
    char* base = reinterpret_cast<char*>(align_up(static_cast<int64_t>(raw), kWorkspaceAlignment));
    if (args->dweight != nullptr) b.partial_gamma = reinterpret_cast<float*>(base);
    if (args->dbias != nullptr)
      b.partial_beta = reinterpret_cast<float*>(base + partial_region_bytes(n, h));
  }

  const LaunchConfig config = launch_config(p, args->stream);
  int error = 0;
  switch (p.x_dtype) {
    case Dtype::F32: error = launch_backward_rows_f32(b, config); break;
    case Dtype::BF16: error = launch_backward_rows_bf16(b, config); break;
    default: error = launch_backward_rows_f16(b, config); break;
  }
  check_cuda(error, std::string("the ") + kind_name(p.kind) + " backward kernel launch");
  if (args->dweight != nullptr || args->dbias != nullptr)
    check_cuda(launch_final_sums(b, config), "the dweight/dbias kernel launch");
}

}  // namespace switchyard::apex
