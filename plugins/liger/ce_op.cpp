// Order of work for one forward (docs: plugins/liger/README.md, "Cross entropy"):
//   [SY_CE_CHECK_LABELS] label check kernel, copy of its verdict to the host, refusal
//   tp_size == 1:  stats kernel (loss, lse, argmax), or the fused kernel that also writes the
//                  gradient (SY_CE_GRAD_IN_FORWARD: Liger's native mode)
//   tp_size > 1:   partial stats -> all_reduce(MAX) -> combine -> [all_reduce(MIN) argmax]
//                  -> all_reduce(SUM) of (sum exp | target logit | sum z) -> finalize
//                  -> [gradient kernel with grad_scale]
// Nothing the caller reads is written before the last collective succeeded.
#include "ce_op.hpp"

#include "ce_workspace.hpp"
#include "common_checks.hpp"
#include "cuda_support.hpp"
#include "kernels/launch.hpp"

#include "native/ce_semantics.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <string>

namespace switchyard::liger {
namespace {

template <class T>
T* carve(void* workspace, int64_t offset) {
  return offset < 0 ? nullptr
                    : reinterpret_cast<T*>(static_cast<char*>(workspace) + offset);
}

CeRows rows_of(const sy_ce_problem& p, const DLTensor& logits, const DLTensor& labels,
               const Options& options) {
  CeRows r;
  r.logits = data_of(logits);
  r.logits_stride = stride_of(logits);
  r.logits_dt = to_dt(p.logits_dtype);
  r.logits_aligned = aligned16(logits);
  r.labels = data_of(labels);
  r.labels64 = sy::same(p.label_dtype, sy::kI64);
  r.rows = p.rows;
  r.vocab_local = p.vocab_local;
  r.vocab_start = p.vocab_start;
  r.vocab_size = p.vocab_size;
  r.use_ignore_index = (p.flags & SY_CE_IGNORE_INDEX) != 0;
  r.ignore_index = p.ignore_index;
  const double s = native::smoothing_weight(p);
  r.smoothing = static_cast<float>(s);
  r.smoothing_over_v = static_cast<float>(s / static_cast<double>(p.vocab_size));
  r.z_loss_scale = options.lse_square_scale;
  r.argmax = (p.flags & SY_CE_ARGMAX) != 0;
  r.threads = row_threads(p.vocab_local);
  return r;
}

CeGradOut grad_of(const sy_ce_problem& p, DLTensor& grad, const DLTensor& scale,
                  const float* lse) {
  CeGradOut g;
  g.scale = sy::data_as<const float>(scale);
  g.lse = lse;
  g.grad = data_of(grad);
  g.grad_stride = stride_of(grad);
  g.grad_dt = to_dt(p.grad_dtype);
  g.grad_aligned = aligned16(grad);
  return g;
}

// Refuses the call (nothing written) when a label is outside [0, V) and not ignored. Reads
// the verdict on the host: this call synchronises the stream.
void check_labels(const CeRows& r, const DLTensor& labels, unsigned long long* slot,
                  cudaStream_t stream) {
  check_cuda(cudaMemsetAsync(slot, 0xff, sizeof *slot, stream), "cudaMemsetAsync (label check)");
  check_cuda(launch_ce_check_labels(r, slot, stream), "launching the label check kernel");
  unsigned long long first_bad = 0;
  check_cuda(cudaMemcpyAsync(&first_bad, slot, sizeof first_bad, cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync (label check verdict)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (label check)");
  if (first_bad == ~0ull) return;
  const int64_t row = static_cast<int64_t>(first_bad);
  int64_t label64 = 0;
  int32_t label32 = 0;
  void* label_out = r.labels64 ? static_cast<void*>(&label64) : static_cast<void*>(&label32);
  const char* label_at = sy::data_as<const char>(labels) + row * (r.labels64 ? 8 : 4);
  check_cuda(cudaMemcpyAsync(label_out, label_at, r.labels64 ? 8 : 4, cudaMemcpyDeviceToHost,
                             stream),
             "cudaMemcpyAsync (the refused label)");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (the refused label)");
  const int64_t label = r.labels64 ? label64 : label32;
  invalid("labels[" + str(row) + "] = " + str(label) + " is outside the vocabulary [0, " +
          str(r.vocab_size) + ")" +
          (r.use_ignore_index ? " and is not ignore_index = " + str(r.ignore_index)
                              : std::string()) +
          " (SY_CE_CHECK_LABELS; row " + str(row) +
          " is the first such row); fix the label or mark the row with ignore_index; nothing "
          "was written");
}

// The collective on device buffers, ordered on the call's stream (in place when send ==
// receive). A failure is SY_ERR_COMMUNICATION with the communicator's message.
void all_reduce(const sy_comm& tp, const void* send, void* receive, int64_t count,
                DLDataType dtype, sy_reduce_op op, void* stream, const char* what) {
  sy_error error{};
  error.struct_size = sizeof error;
  const sy_status status = tp.all_reduce(tp.ctx, send, receive, count, dtype, op, stream, &error);
  if (status == SY_OK) return;
  sy::fail(SY_ERR_COMMUNICATION,
           std::string("tp->all_reduce of ") + what + " (" + str(count) + " x " +
               sy::dtype_name(dtype) + ", rank " + str(tp.rank) + " of " + str(tp.size) +
               ") failed: " + (error.message[0] != '\0' ? error.message : "no message"));
}

}  // namespace

void ce_forward(const sy_ce_forward_args& args, const Options& options) {
  const sy_ce_problem& p = *args.problem;
  if (p.rows == 0) return;
  const CeRows r = rows_of(p, *args.logits, *args.labels, options);
  const bool grad_in_forward = (p.flags & SY_CE_GRAD_IN_FORWARD) != 0;
  const CeWorkspaceLayout layout = ce_workspace_layout(p);
  DeviceGuard device(p.device.device_id);
  cudaStream_t stream = static_cast<cudaStream_t>(args.stream);

  if ((p.flags & SY_CE_CHECK_LABELS) != 0)
    check_labels(r, *args.labels, carve<unsigned long long>(args.workspace, layout.check_slot),
                 stream);

  CeForwardOut out;
  out.loss = sy::data_as<float>(*args.loss);
  out.lse = sy::data_as<float>(*args.lse);
  out.argmax = r.argmax ? sy::data_as<int64_t>(*args.argmax) : nullptr;

  if (p.tp_size == 1) {
    if (grad_in_forward) {
      const CeGradOut grad = grad_of(p, *args.grad_logits, *args.grad_scale, nullptr);
      check_cuda(launch_ce_fused(r, out, grad, stream), "launching the fused cross-entropy kernel");
    } else {
      check_cuda(launch_ce_stats(r, out, stream), "launching the cross-entropy kernel");
    }
    return;
  }

  const sy_comm& tp = *args.tp;
  CeTpScratch scratch;
  scratch.local_max = carve<float>(args.workspace, layout.local_max);
  scratch.global_max = carve<float>(args.workspace, layout.global_max);
  scratch.local_sum_exp = carve<float>(args.workspace, layout.local_sum_exp);
  scratch.packed = carve<float>(args.workspace, layout.packed);
  scratch.candidates = carve<int64_t>(args.workspace, layout.candidates);
  check_cuda(launch_ce_partial_stats(r, scratch, stream),
             "launching the cross-entropy row statistics kernel");
  all_reduce(tp, scratch.local_max, scratch.global_max, p.rows, sy::kF32, SY_REDUCE_MAX,
                  args.stream, "the row maxima");
  check_cuda(launch_ce_tp_combine(r, scratch, stream), "launching the rescale kernel");
  if (r.argmax)
    all_reduce(tp, scratch.candidates, scratch.candidates, p.rows, sy::kI64, SY_REDUCE_MIN,
               args.stream, "the argmax candidates");
  all_reduce(tp, scratch.packed, scratch.packed, 3 * p.rows, sy::kF32, SY_REDUCE_SUM,
             args.stream, "the sums of exponentials, target logits and sums of logits");
  check_cuda(launch_ce_tp_finalize(r, scratch, out, stream), "launching the loss kernel");
  if (grad_in_forward) {
    const CeGradOut grad = grad_of(p, *args.grad_logits, *args.grad_scale, out.lse);
    check_cuda(launch_ce_gradient(r, grad, stream), "launching the cross-entropy gradient kernel");
  }
}

void ce_backward(const sy_ce_backward_args& args, const Options& options) {
  const sy_ce_problem& p = *args.problem;
  if (p.rows == 0) return;
  const CeRows r = rows_of(p, *args.logits, *args.labels, options);
  DeviceGuard device(p.device.device_id);
  const CeGradOut grad =
      grad_of(p, *args.grad_logits, *args.grad_loss, sy::data_as<const float>(*args.lse));
  check_cuda(launch_ce_gradient(r, grad, static_cast<cudaStream_t>(args.stream)),
             "launching the cross-entropy gradient kernel");
}

}  // namespace switchyard::liger
