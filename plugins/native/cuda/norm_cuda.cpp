// Host side of the CUDA norms: where the memory is, the workspace carve-up, and the order of
// the kernels (the dgamma/dbeta partials read dy and x_or_y before dx may overwrite them).
#include "norm_cuda.hpp"

#include "chunk_geometry.hpp"
#include "cuda_check.hpp"
#include "norm_kernels.hpp"
#include "tensor_args.hpp"

#include <switchyard/plugin_helpers.hpp>

namespace switchyard::native::cuda {
namespace {

constexpr int64_t kAlignment = 256;

bool has(const sy_norm_problem& p, uint32_t flag) { return (p.flags & flag) != 0; }

// One partial row of padded_columns(H) doubles per kRowsPerPartial rows.
int64_t partial_bytes(const sy_norm_problem& p) {
  const int64_t row_block_values = sy::checked_multiply(
      weight_partial_blocks(p.rows), padded_columns(p.hidden), "row blocks x hidden");
  return sy::align_up(sy::checked_multiply(row_block_values, 8, "the dgamma partials"),
                      kAlignment);
}

NormKind kind_of(const sy_norm_problem& p) { return static_cast<NormKind>(p.kind); }

}  // namespace

int64_t norm_cuda_workspace_bytes(const sy_norm_problem& problem) {
  if (problem.kind == SY_NORM_L2) return 0;  // no dgamma/dbeta
  return 2 * partial_bytes(problem) + kAlignment;
}

void norm_cuda_forward(const sy_norm_forward_args& a) {
  const sy_norm_problem& p = *a.problem;
  const DLDevice device = p.device;
  require_current_device(device);
  require_device_tensor(a.x, "x", device);
  require_device_tensor(a.residual, "residual", device);
  require_device_tensor(a.weight, "weight", device);
  require_device_tensor(a.bias, "bias", device);
  require_device_tensor(a.y, "y", device);
  require_device_tensor(a.residual_out, "residual_out", device);
  if (p.kind == SY_NORM_LAYER) require_device_tensor(a.mean, "mean", device);
  require_device_tensor(a.rstd, "rstd", device);

  NormForwardArgs f;
  f.rows = p.rows;
  f.hidden = p.hidden;
  f.kind = kind_of(p);
  f.eps = static_cast<double>(p.eps);
  f.zero_centered_gamma = has(p, SY_NORM_ZERO_CENTERED_GAMMA);
  f.x = matrix_of(a.x);
  if (has(p, SY_NORM_RESIDUAL)) {
    f.residual = matrix_of(a.residual);
    f.residual_out = mutable_matrix_of(a.residual_out);
  }
  if (p.kind != SY_NORM_L2) {
    f.gamma = data_of(a.weight);
    f.beta = data_of(a.bias);
    f.weight_type = dtype_of(p.weight_dtype);
    f.gamma_vector = vector_aligned(f.gamma);
    f.beta_vector = vector_aligned(f.beta);
  }
  f.y = mutable_matrix_of(a.y);
  f.mean = p.kind == SY_NORM_LAYER ? mutable_typed<float>(a.mean) : nullptr;
  f.rstd = mutable_typed<float>(a.rstd);
  check(launch_norm_forward(f, static_cast<cudaStream_t>(a.stream)), "the norm forward kernel");
}

void norm_cuda_backward(const sy_norm_backward_args& a) {
  const sy_norm_problem& p = *a.problem;
  const DLDevice device = p.device;
  const bool memory_efficient = has(p, SY_NORM_MEMORY_EFFICIENT);
  const bool weight_grads = a.dweight != nullptr || a.dbias != nullptr;
  require_current_device(device);
  require_device_tensor(a.dy, "dy", device);
  require_device_tensor(a.x_or_y, "x_or_y", device);
  require_device_tensor(a.weight, "weight", device);
  require_device_tensor(a.bias, "bias", device);
  if (p.kind == SY_NORM_LAYER && !memory_efficient) require_device_tensor(a.mean, "mean", device);
  require_device_tensor(a.rstd, "rstd", device);
  require_device_tensor(a.d_residual_out, "d_residual_out", device);
  require_device_tensor(a.dx, "dx", device);
  require_device_tensor(a.dweight, "dweight", device);
  require_device_tensor(a.dbias, "dbias", device);
  if (weight_grads) require_device_memory(a.workspace, "workspace", device);

  NormBackwardArgs b;
  b.rows = p.rows;
  b.hidden = p.hidden;
  b.kind = kind_of(p);
  b.zero_centered_gamma = has(p, SY_NORM_ZERO_CENTERED_GAMMA);
  b.memory_efficient = memory_efficient;
  b.dy = matrix_of(a.dy);
  b.x_or_y = matrix_of(a.x_or_y);
  if (p.kind != SY_NORM_L2) {
    b.gamma = data_of(a.weight);
    b.beta = data_of(a.bias);
    b.weight_type = dtype_of(p.weight_dtype);
    b.gamma_vector = vector_aligned(b.gamma);
    b.beta_vector = vector_aligned(b.beta);
  }
  b.mean = p.kind == SY_NORM_LAYER && !memory_efficient ? typed<float>(a.mean) : nullptr;
  b.rstd = typed<float>(a.rstd);
  if (a.d_residual_out != nullptr) b.d_residual_out = matrix_of(a.d_residual_out);
  b.dx = mutable_matrix_of(a.dx);

  const cudaStream_t stream = static_cast<cudaStream_t>(a.stream);
  double* partial_gamma = nullptr;
  double* partial_beta = nullptr;
  if (weight_grads) {
    char* base = aligned_workspace(a.workspace, kAlignment);
    // Only the partials of a requested gradient are computed.
    if (a.dweight != nullptr) partial_gamma = reinterpret_cast<double*>(base);
    if (a.dbias != nullptr) partial_beta = reinterpret_cast<double*>(base + partial_bytes(p));
    // Before dx: dx may be written over dy or x_or_y.
    check(launch_norm_weight_partials(b, partial_gamma, partial_beta, stream),
          "the dgamma/dbeta partial-sum kernel");
  }
  check(launch_norm_backward(b, stream), "the norm backward (dx) kernel");
  if (weight_grads) {
    WeightFinalizeArgs w;
    w.rows = p.rows;
    w.hidden = p.hidden;
    w.partial_gamma = partial_gamma;
    w.partial_beta = partial_beta;
    w.accumulate = has(p, SY_NORM_ACCUMULATE_GRAD_WEIGHT);
    w.dgamma = mutable_data_of(a.dweight);
    w.dbeta = mutable_data_of(a.dbias);
    w.grad_type = dtype_of(p.grad_weight_dtype);
    check(launch_norm_weight_finalize(w, stream), "the dgamma/dbeta finalize kernel");
  }
}

}  // namespace switchyard::native::cuda
