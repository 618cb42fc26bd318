#include "norm_op.hpp"

#include "common_checks.hpp"
#include "cuda_support.hpp"
#include "kernels/launch.hpp"
#include "kernels/norm_geometry.hpp"
#include "norm_validate.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <initializer_list>

namespace switchyard::liger {
namespace {

NormKind kind_of(sy_norm_kind kind) {
  return kind == SY_NORM_LAYER ? NormKind::Layer
         : kind == SY_NORM_RMS ? NormKind::Rms
                               : NormKind::L2;
}

// Every present tensor allows 16-byte accesses.
bool all_aligned(std::initializer_list<const DLTensor*> tensors) {
  for (const DLTensor* t : tensors)
    if (t != nullptr && !aligned16(*t)) return false;
  return true;
}

const void* data_or_null(const DLTensor* t) { return t != nullptr ? data_of(*t) : nullptr; }
int64_t stride_or_zero(const DLTensor* t) { return t != nullptr ? stride_of(*t) : 0; }

}  // namespace

void norm_forward(const sy_norm_forward_args& args, const Options& options) {
  const sy_norm_problem& p = *args.problem;
  if (p.rows == 0) return;
  NormForwardArgs k;
  k.kind = kind_of(p.kind);
  k.rows = p.rows;
  k.hidden = p.hidden;
  k.eps = p.eps;
  k.zero_centered = (p.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0;
  k.llama = options.casting_mode == CastingMode::Llama;
  k.x = data_of(*args.x);
  k.x_stride = stride_of(*args.x);
  k.x_dt = to_dt(p.x_dtype);
  if ((p.flags & SY_NORM_RESIDUAL) != 0) {
    k.residual = data_of(*args.residual);
    k.residual_stride = stride_of(*args.residual);
    k.residual_out = data_of(*args.residual_out);
    k.residual_out_stride = stride_of(*args.residual_out);
  }
  k.weight = data_or_null(args.weight);
  k.bias = data_or_null(args.bias);
  k.w_dt = to_dt(p.weight_dtype);
  k.y = data_of(*args.y);
  k.y_stride = stride_of(*args.y);
  k.y_dt = to_dt(p.y_dtype);
  k.mean = p.kind == SY_NORM_LAYER ? sy::data_as<float>(*args.mean) : nullptr;
  k.rstd = sy::data_as<float>(*args.rstd);
  k.aligned = all_aligned({args.x, args.residual, args.residual_out, args.weight, args.bias,
                           args.y});
  k.threads = norm_forward_threads(p.hidden);  // the row in registers up to H = 16384
  DeviceGuard device(p.device.device_id);
  k.sm_count = multiprocessor_count(p.device.device_id);
  check_cuda(launch_norm_forward(k, static_cast<cudaStream_t>(args.stream)),
             std::string("launching the ") + norm_kind_name(p.kind) + " forward kernel");
}

void norm_backward(const sy_norm_backward_args& args, const Options& options) {
  const sy_norm_problem& p = *args.problem;
  const NormWorkspaceLayout layout = norm_workspace_layout(p);
  char* workspace = static_cast<char*>(args.workspace);
  NormBackwardArgs k;
  k.kind = kind_of(p.kind);
  k.rows = p.rows;
  k.hidden = p.hidden;
  k.zero_centered = (p.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0;
  k.memory_efficient = (p.flags & SY_NORM_MEMORY_EFFICIENT) != 0;
  k.llama = options.casting_mode == CastingMode::Llama;
  k.dy = data_of(*args.dy);
  k.dy_stride = stride_of(*args.dy);
  k.y_dt = to_dt(p.y_dtype);
  k.x_or_y = data_of(*args.x_or_y);
  k.x_or_y_stride = stride_of(*args.x_or_y);
  k.x_or_y_dt = to_dt(k.memory_efficient ? p.y_dtype : p.x_dtype);
  k.weight = data_or_null(args.weight);
  k.bias = data_or_null(args.bias);
  k.w_dt = to_dt(p.weight_dtype);
  k.mean = args.mean != nullptr ? sy::data_as<const float>(*args.mean) : nullptr;
  k.rstd = sy::data_as<const float>(*args.rstd);
  k.d_residual_out = data_or_null(args.d_residual_out);
  k.d_residual_out_stride = stride_or_zero(args.d_residual_out);
  k.dx = data_of(*args.dx);
  k.dx_stride = stride_of(*args.dx);
  k.x_dt = to_dt(p.x_dtype);
  if (p.rows > 0) {
    if (args.dweight != nullptr)
      k.dweight_partial = reinterpret_cast<float*>(workspace + layout.dweight_partial);
    if (args.dbias != nullptr)
      k.dbias_partial = reinterpret_cast<float*>(workspace + layout.dbias_partial);
  }
  k.rows_per_block = layout.rows_per_block;
  k.aligned = all_aligned({args.dy, args.x_or_y, args.weight, args.bias, args.d_residual_out,
                           args.dx});
  // Up to H = 8192: 1-2 chunks a thread (LayerNorm of one 16-bit row dtype, not
  // memory-efficient: up to 4), <= 512 threads.
  k.threads = norm_backward_threads(
      p.hidden, norm_backward_four_chunks(k.kind, k.memory_efficient, k.y_dt, k.x_or_y_dt, k.x_dt));

  DeviceGuard device(p.device.device_id);
  k.sm_count = multiprocessor_count(p.device.device_id);
  cudaStream_t stream = static_cast<cudaStream_t>(args.stream);
  check_cuda(launch_norm_backward(k, stream),
             std::string("launching the ") + norm_kind_name(p.kind) + " backward kernel");
  const bool accumulate = (p.flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0;
  const int64_t blocks = layout.blocks;
  if (args.dweight != nullptr)
    check_cuda(launch_norm_weight_grad(k.dweight_partial, blocks, p.hidden,
                                       data_of(*args.dweight), to_dt(p.grad_weight_dtype),
                                       accumulate, stream),
               "launching the dgamma reduction kernel");
  if (args.dbias != nullptr)
    check_cuda(launch_norm_weight_grad(k.dbias_partial, blocks, p.hidden, data_of(*args.dbias),
                                       to_dt(p.grad_weight_dtype), accumulate, stream),
               "launching the dbeta reduction kernel");
}

}  // namespace switchyard::liger
