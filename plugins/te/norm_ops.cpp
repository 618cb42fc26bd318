// Normalization, host side (README.md, "Normalization"):
//   forward:  norm_forward_kernel
//   backward: norm_backward_kernel (dx, and dgamma/dbeta partials per fixed chunk of rows in the
//             workspace) -> norm_finalize_kernel (the partials summed in a fixed order)
// Nothing is allocated and nothing synchronises.
#include "norm_ops.hpp"

#include "ce_plan.hpp"
#include "cuda_support.hpp"
#include "device_tensors.hpp"
#include "norm_kernels.hpp"
#include "norm_plan.hpp"
#include "norm_validate.hpp"
#include "tensor_checks.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <initializer_list>
#include <string>

namespace switchyard::te {
namespace {

const void* data_or_null(const DLTensor* t) { return t != nullptr ? first_byte(*t) : nullptr; }
void* mutable_or_null(const DLTensor* t) {
  return t != nullptr ? const_cast<char*>(first_byte(*t)) : nullptr;
}
int64_t row_bytes(const DLTensor* t) {
  return t != nullptr ? row_stride_elements(*t) * element_size(*t) : 0;
}

// The 16-byte vector path needs every row of every [rows, hidden] tensor, and the parameter
// vectors, to start where a chunk's pack may be loaded whole: min(16, vec x element size).
bool vector_layout(int vec, std::initializer_list<const DLTensor*> tensors) {
  for (const DLTensor* t : tensors) {
    if (t == nullptr) continue;
    const int64_t pack = vec * element_size(*t);
    if (!rows_aligned(*t, pack < 16 ? pack : 16)) return false;
  }
  return true;
}

void require_usable_margin(int sm_margin, int device) {
  const DeviceInfo info = device_info(device);
  if (sm_margin >= info.multiprocessors)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             "problem.sm_margin = " + std::to_string(sm_margin) + " leaves none of the " +
                 std::to_string(info.multiprocessors) + " multiprocessors of cuda:" +
                 std::to_string(device) + " to te; use a margin below " +
                 std::to_string(info.multiprocessors));
}

}  // namespace

int64_t norm_workspace_bytes(const sy_norm_problem& problem) {
  return norm_plan(problem).workspace_bytes;
}

void check_sm_margin_if_possible(const sy_norm_problem& p) {
  if (p.sm_margin == 0) return;
  int multiprocessors = 0;
  if (cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount,
                             p.device.device_id) != cudaSuccess) {
    (void)cudaGetLastError();  // no device here: forward/backward will say so
    return;
  }
  if (p.sm_margin >= multiprocessors)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             "problem.sm_margin = " + std::to_string(p.sm_margin) + " leaves none of the " +
                 std::to_string(multiprocessors) + " multiprocessors of " +
                 sy::device_name(p.device) + " to te; use a margin below " +
                 std::to_string(multiprocessors));
}

void norm_forward(const sy_norm_forward_args& args) {
  const sy_norm_problem& p = *args.problem;
  validate_norm_forward(args);
  const NormPlan plan = norm_plan(p);
  const int device = p.device.device_id;
  DeviceGuard guard(device);
  require_usable_margin(p.sm_margin, device);
  require_device_tensors({{args.x, "x"},
                          {args.residual, "residual"},
                          {args.weight, "weight"},
                          {args.bias, "bias"},
                          {args.y, "y"},
                          {args.residual_out, "residual_out"},
                          {p.kind == SY_NORM_LAYER ? args.mean : nullptr, "mean"},
                          {args.rstd, "rstd"}},
                         p.device);
  if (p.rows == 0) return;
  const bool residual = (p.flags & SY_NORM_RESIDUAL) != 0;
  NormForwardArgs a;
  a.x = data_or_null(args.x);
  a.residual = residual ? data_or_null(args.residual) : nullptr;
  a.weight = data_or_null(args.weight);
  a.bias = data_or_null(args.bias);
  a.y = mutable_or_null(args.y);
  a.residual_out = residual ? mutable_or_null(args.residual_out) : nullptr;
  a.mean = p.kind == SY_NORM_LAYER ? static_cast<float*>(mutable_or_null(args.mean)) : nullptr;
  a.rstd = static_cast<float*>(mutable_or_null(args.rstd));
  a.x_row_bytes = row_bytes(args.x);
  a.residual_row_bytes = residual ? row_bytes(args.residual) : 0;
  a.y_row_bytes = row_bytes(args.y);
  a.residual_out_row_bytes = residual ? row_bytes(args.residual_out) : 0;
  a.rows = p.rows;
  a.hidden = p.hidden;
  a.kind = p.kind;
  a.x_dtype = to_dtype(p.x_dtype);
  a.y_dtype = to_dtype(p.y_dtype);
  a.weight_dtype = to_dtype(p.weight_dtype);
  a.zero_centered = (p.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0 ? 1 : 0;
  a.vector_ok = vector_layout(plan.forward.vec, {args.x, residual ? args.residual : nullptr,
                                                 args.y, residual ? args.residual_out : nullptr,
                                                 args.weight, args.bias})
                    ? 1
                    : 0;
  a.eps = p.eps;
  // The streamed RMS/L2 forward claims its rows through a counter in the workspace
  // (row_claims.hpp). Without one (NULL: the forward needed none before) rows go by stride.
  if (plan.row_claims_bytes > 0 && args.workspace != nullptr) {
    require_workspace(args.workspace, args.workspace_bytes, plan.workspace_bytes);
    require_device_memory(args.workspace, "workspace", p.device);
    a.row_claims = reinterpret_cast<unsigned long long*>(static_cast<char*>(args.workspace) +
                                                         plan.row_claims_offset);
  }
  launch_norm_forward(a, plan.forward, device, p.sm_margin, args.stream);
}

void norm_backward(const sy_norm_backward_args& args) {
  const sy_norm_problem& p = *args.problem;
  const NormPlan plan = norm_plan(p);
  // The partials only: the row counter after them is the forward's.
  validate_norm_backward(args, plan.row_claims_offset);
  const int device = p.device.device_id;
  DeviceGuard guard(device);
  require_usable_margin(p.sm_margin, device);
  const bool memory_efficient = (p.flags & SY_NORM_MEMORY_EFFICIENT) != 0;
  const bool layer_mean = p.kind == SY_NORM_LAYER && !memory_efficient;
  require_device_tensors({{args.dy, "dy"},
                          {args.x_or_y, "x_or_y"},
                          {args.weight, "weight"},
                          {args.bias, "bias"},
                          {layer_mean ? args.mean : nullptr, "mean"},
                          {args.rstd, "rstd"},
                          {args.d_residual_out, "d_residual_out"},
                          {args.dx, "dx"},
                          {args.dweight, "dweight"},
                          {args.dbias, "dbias"}},
                         p.device);
  const bool want_gamma = args.dweight != nullptr;
  const bool want_beta = args.dbias != nullptr;
  if ((want_gamma || want_beta) && plan.workspace_bytes > 0)
    require_device_memory(args.workspace, "workspace", p.device);
  char* workspace = static_cast<char*>(args.workspace);
  float* partial_gamma = want_gamma ? reinterpret_cast<float*>(workspace) : nullptr;
  float* partial_beta =
      want_beta ? reinterpret_cast<float*>(workspace + plan.partial_bytes) : nullptr;

  if (p.rows > 0) {
    NormBackwardArgs a;
    a.dy = data_or_null(args.dy);
    a.x_or_y = data_or_null(args.x_or_y);
    a.weight = data_or_null(args.weight);
    a.bias = data_or_null(args.bias);
    a.mean = layer_mean ? static_cast<const float*>(data_or_null(args.mean)) : nullptr;
    a.rstd = static_cast<const float*>(data_or_null(args.rstd));
    a.d_residual_out = data_or_null(args.d_residual_out);
    a.dx = mutable_or_null(args.dx);
    a.partial_gamma = partial_gamma;
    a.partial_beta = partial_beta;
    a.dy_row_bytes = row_bytes(args.dy);
    a.x_or_y_row_bytes = row_bytes(args.x_or_y);
    a.d_residual_out_row_bytes = row_bytes(args.d_residual_out);
    a.dx_row_bytes = row_bytes(args.dx);
    a.rows = p.rows;
    a.hidden = p.hidden;
    a.rows_per_chunk = plan.rows_per_chunk;
    a.chunk_count = plan.chunk_count;
    a.kind = p.kind;
    a.x_dtype = to_dtype(p.x_dtype);
    a.y_dtype = to_dtype(p.y_dtype);
    a.x_or_y_dtype = memory_efficient ? a.y_dtype : a.x_dtype;
    a.weight_dtype = to_dtype(p.weight_dtype);
    a.zero_centered = (p.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0 ? 1 : 0;
    a.memory_efficient = memory_efficient ? 1 : 0;
    a.vector_ok = vector_layout(plan.backward.vec, {args.dy, args.x_or_y, args.d_residual_out,
                                                    args.dx, args.weight,
                                                    memory_efficient ? args.bias : nullptr})
                      ? 1
                      : 0;
    launch_norm_backward(a, plan.backward, device, p.sm_margin, args.stream);
  }
  if (want_gamma || want_beta) {
    NormFinalizeArgs f;
    f.partial_gamma = partial_gamma;
    f.partial_beta = partial_beta;
    f.dweight = mutable_or_null(args.dweight);
    f.dbias = mutable_or_null(args.dbias);
    f.hidden = p.hidden;
    f.chunk_count = p.rows > 0 ? plan.chunk_count : 0;
    f.grad_dtype = to_dtype(p.grad_weight_dtype);
    f.accumulate = (p.flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0 ? 1 : 0;
    launch_norm_finalize(f, args.stream);
  }
}

}  // namespace switchyard::te
