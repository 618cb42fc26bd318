// Cross entropy, host side (README.md, "Cross entropy"):
//   tp_size 1:  statistics (lse, loss, argmax): the streamed kernel for logits that can be
//               bulk-copied, else slice Stats; or, with grad in forward, the persistent slice
//               Fused kernel for logits that can be bulk-copied (and a vector-aligned grad),
//               else slice Fused
//   tp_size > 1: statistics (this rank's CeRowStats) -> all_gather -> ce_merge_kernel
//                (-> slice Grad with grad in forward)
//   backward:   slice Grad kernel
// (ce_stats_kernel / ce_fused_kernel / ce_grad_kernel for rows wider than 8 slices of 64 KiB,
// or when the device cannot schedule the clusters.)
// Nothing is allocated and nothing synchronises: graph capture records the launches (and the
// communicator's all-gather).
#include "ce_ops.hpp"

#include "ce_kernels.hpp"
#include "ce_plan.hpp"
#include "ce_validate.hpp"
#include "cuda_support.hpp"
#include "device_tensors.hpp"
#include "tensor_checks.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <string>

namespace switchyard::te {
namespace {

CeKernelArgs kernel_args(const sy_ce_problem& p, const CePlan& plan, const DLTensor& logits,
                         const DLTensor& labels) {
  CeKernelArgs a;
  a.logits = first_byte(logits);
  a.logits_stride = row_stride_elements(logits);
  a.labels = first_byte(labels);
  a.labels_are_64 = sy::same(p.label_dtype, sy::kI64) ? 1 : 0;
  a.rows = p.rows;
  a.vocab_local = p.vocab_local;
  a.vocab_start = p.vocab_start;
  a.vocab_size = p.vocab_size;
  a.ignore_index = p.ignore_index;
  a.ignore = (p.flags & SY_CE_IGNORE_INDEX) != 0 ? 1 : 0;
  a.smoothing = plan.scalars.smoothing != 0.0f ? 1 : 0;
  a.tp_size = p.tp_size;
  a.chunks = plan.chunks;
  a.scalars = plan.scalars;
  a.cluster = plan.cluster;
  a.slice_chunks = plan.slice_chunks;
  return a;
}

template <class T>
T* mutable_data(const DLTensor& t) {
  return reinterpret_cast<T*>(const_cast<char*>(first_byte(t)));
}

void all_gather_statistics(const sy_comm& tp, CeRowStats* gathered, int64_t rows, void* stream) {
  const int64_t words = rows * static_cast<int64_t>(sizeof(CeRowStats) / sizeof(int64_t));
  CeRowStats* mine = gathered + static_cast<int64_t>(tp.rank) * rows;
  sy_error error{};
  error.struct_size = sizeof error;
  const sy_status status = tp.all_gather(tp.ctx, mine, gathered, words, sy::kI64, stream, &error);
  if (status != SY_OK)
    sy::fail(status, "te: tp->all_gather of the per-row statistics (" + std::to_string(words) +
                         " int64 per rank, rank " + std::to_string(tp.rank) + " of " +
                         std::to_string(tp.size) + ") failed: " +
                         (error.message[0] != '\0' ? error.message : "no message"));
}

// The gradient from a known lse: the slice kernel in the gradient's own slices (ce_plan.hpp:
// 4 KiB blocks of 32 threads, no cluster) when the row fits the slice kernels, else
// ce_grad_kernel. Element-wise: the same bits either way.
void launch_gradient(const CeKernelArgs& a, const CePlan& plan, int device, void* stream) {
  if (plan.slices) {
    CeKernelArgs grad = a;
    grad.cluster = plan.grad_slices;
    grad.slice_chunks = plan.grad_slice_chunks;
    launch_ce_slice_grad(grad, plan.logits, plan.grad, plan.grad_threads, device, stream);
  } else
    launch_ce_grad(a, plan.logits, plan.grad, plan.stats_threads, stream);
}

}  // namespace

int64_t ce_workspace_bytes(const sy_ce_problem& problem) {
  return ce_plan(problem).workspace_bytes;
}

void ce_forward(const sy_ce_forward_args& args) {
  const sy_ce_problem& p = *args.problem;
  const CePlan plan = ce_plan(p);
  validate_ce_forward(args, plan.workspace_bytes);
  const bool grad_in_forward = (p.flags & SY_CE_GRAD_IN_FORWARD) != 0;
  const bool want_argmax = (p.flags & SY_CE_ARGMAX) != 0;
  const int device = p.device.device_id;
  DeviceGuard guard(device);
  (void)device_info(device);  // refuses a GPU older than sm_90
  require_device_tensors({{args.logits, "logits"},
                          {args.labels, "labels"},
                          {args.loss, "loss"},
                          {args.lse, "lse"},
                          {want_argmax ? args.argmax : nullptr, "argmax"},
                          {grad_in_forward ? args.grad_scale : nullptr, "grad_scale"},
                          {grad_in_forward ? args.grad_logits : nullptr, "grad_logits"}},
                         p.device);
  if (plan.workspace_bytes > 0) require_device_memory(args.workspace, "workspace", p.device);

  CeKernelArgs a = kernel_args(p, plan, *args.logits, *args.labels);
  a.loss = mutable_data<float>(*args.loss);
  a.lse = mutable_data<float>(*args.lse);
  a.argmax = want_argmax ? mutable_data<int64_t>(*args.argmax) : nullptr;
  if (grad_in_forward) {
    a.grad = mutable_data<char>(*args.grad_logits);
    a.grad_stride = row_stride_elements(*args.grad_logits);
    a.row_scale = mutable_data<float>(*args.grad_scale);
    if (p.tp_size == 1 && plan.workspace_bytes > 0)
      a.row_claims = static_cast<unsigned long long*>(args.workspace);
  }
  const int64_t n = p.rows;

  // The slice kernels whenever the row fits them and the device schedules their clusters; the
  // question and its answer are the same with and without grad in forward.
  const bool slices = n > 0 && plan.slices &&
                      ce_slices_available(a, plan.logits, plan.grad, plan.slice_threads, device);
  if (p.tp_size == 1) {
    if (n == 0) return;
    if (slices && grad_in_forward && ce_slice_fused_persistent_fits(a, plan.logits, plan.grad))
      launch_ce_slice_fused_persistent(a, plan.logits, plan.grad, plan.slice_threads, device,
                                       args.stream);
    else if (slices && grad_in_forward)
      launch_ce_slice_fused(a, plan.logits, plan.grad, plan.slice_threads, device, args.stream);
    else if (slices)
      launch_ce_slice_stats(a, plan.logits, plan.slice_threads, device, args.stream);
    else if (grad_in_forward)
      launch_ce_fused(a, plan.logits, plan.grad, plan.fused_threads, plan.fused_slots, device,
                      args.stream);
    else
      launch_ce_stats(a, plan.logits, plan.stats_threads, args.stream);
    return;
  }

  // Tensor parallel: this rank's statistics into its slot of the gather buffer, one
  // all-gather (issued even for 0 rows, so every forward issues what forward_collectives says),
  // then the merge on every rank.
  auto* gathered = static_cast<CeRowStats*>(args.workspace);
  if (n > 0) {
    CeKernelArgs local = a;
    local.stats = gathered + static_cast<int64_t>(args.tp->rank) * n;
    if (slices)
      launch_ce_slice_stats(local, plan.logits, plan.slice_threads, device, args.stream);
    else
      launch_ce_stats(local, plan.logits, plan.stats_threads, args.stream);
  }
  all_gather_statistics(*args.tp, gathered, n, args.stream);
  if (n == 0) return;
  a.stats = gathered;
  launch_ce_merge(a, args.stream);
  if (grad_in_forward) {
    // The second pass over the logits needs the global lse, which exists only after the
    // all-gather: it re-reads the logits (3 passes over them at tp_size > 1, 2 at tp_size 1).
    a.lse_in = a.lse;
    launch_gradient(a, plan, device, args.stream);
  }
}

void ce_backward(const sy_ce_backward_args& args) {
  const sy_ce_problem& p = *args.problem;
  validate_ce_backward(args);
  const CePlan plan = ce_plan(p);
  const int device = p.device.device_id;
  DeviceGuard guard(device);
  (void)device_info(device);
  require_device_tensors({{args.logits, "logits"},
                          {args.labels, "labels"},
                          {args.lse, "lse"},
                          {args.grad_loss, "grad_loss"},
                          {args.grad_logits, "grad_logits"}},
                         p.device);
  if (p.rows == 0) return;
  CeKernelArgs a = kernel_args(p, plan, *args.logits, *args.labels);
  a.grad = mutable_data<char>(*args.grad_logits);
  a.grad_stride = row_stride_elements(*args.grad_logits);
  a.lse_in = mutable_data<float>(*args.lse);
  a.row_scale = mutable_data<float>(*args.grad_loss);
  launch_gradient(a, plan, device, args.stream);
}

}  // namespace switchyard::te
