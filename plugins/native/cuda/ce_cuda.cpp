// Megatron's eager vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py)
// on CUDA, one kernel per PyTorch op, all on the caller's stream:
//   [check labels: the only host synchronisation, and only with SY_CE_CHECK_LABELS]
//   upcast to fp32 (workspace) -> row max (+ lowest index) -> all_reduce(MAX)
//   [-> argmax candidates -> all_reduce(MIN, int64)]                         SY_CE_ARGMAX
//   -> subtract -> gather target -> [row sum of z - max: smoothing] -> exp -> row sum
//   -> all_reduce(SUM) of [target | sum of z - max] -> all_reduce(SUM) of the sums of exp
//   -> log, loss, lse (+ argmax) -> [gradient]                               GRAD_IN_FORWARD
// Collectives are issued only for tp_size > 1 (3, or 4 with argmax). Nothing the caller reads
// is written before the last collective has been enqueued successfully.
#include "ce_cuda.hpp"

#include "../ce_semantics.hpp"
#include "ce_kernels.hpp"
#include "chunk_geometry.hpp"
#include "cuda_check.hpp"
#include "tensor_args.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <algorithm>
#include <string>

namespace switchyard::native::cuda {
namespace {

constexpr int64_t kAlignment = 256;
constexpr unsigned long long kNoBadRow = ~0ull;

// The workspace, carved in a fixed order from its first 256-aligned byte.
struct CeWorkspace {
  float* z = nullptr;               // [N, z_stride] fp32 copy, then z - max, then exp(z - max)
  float* local_max = nullptr;       // [N]
  float* global_max = nullptr;      // [N]
  float* target_and_sum = nullptr;  // [2N]: target logit | sum of shifted logits
  float* sum_exp = nullptr;         // [N]
  int64_t* argmax = nullptr;        // [N]: local index, then candidate, then global id
  unsigned long long* first_bad = nullptr;  // [1]: lowest row with a refused label

  struct Segments {
    int64_t z, local_max, global_max, target_and_sum, sum_exp, argmax, first_bad, total;
  };
  static Segments layout(const sy_ce_problem& p) {
    const int64_t n = p.rows;
    Segments s{};
    int64_t at = 0;
    auto place = [&](int64_t bytes) {
      const int64_t offset = at;
      at = sy::align_up(at + bytes, kAlignment);
      return offset;
    };
    // Rows of whole chunks (padded_columns): 32-byte aligned, never a cut chunk.
    s.z = place(sy::checked_multiply(
        sy::checked_multiply(n, padded_columns(p.vocab_local), "rows x vocab_local"), 4,
        "the fp32 logits copy"));
    s.local_max = place(n * 4);
    s.global_max = place(n * 4);
    s.target_and_sum = place(n * 8);
    s.sum_exp = place(n * 4);
    s.argmax = place(n * 8);
    s.first_bad = place(8);
    s.total = at + kAlignment;  // slack: the caller's pointer need not be aligned
    return s;
  }

  CeWorkspace(void* memory, const sy_ce_problem& p) {
    char* base = aligned_workspace(memory, kAlignment);
    const Segments s = layout(p);
    z = reinterpret_cast<float*>(base + s.z);
    local_max = reinterpret_cast<float*>(base + s.local_max);
    global_max = reinterpret_cast<float*>(base + s.global_max);
    target_and_sum = reinterpret_cast<float*>(base + s.target_and_sum);
    sum_exp = reinterpret_cast<float*>(base + s.sum_exp);
    argmax = reinterpret_cast<int64_t*>(base + s.argmax);
    first_bad = reinterpret_cast<unsigned long long*>(base + s.first_bad);
  }
};

LabelRule label_rule(const sy_ce_problem& p) {
  LabelRule r;
  r.vocab_start = p.vocab_start;
  r.vocab_local = p.vocab_local;
  r.vocab_size = p.vocab_size;
  r.ignore_index = p.ignore_index;
  r.use_ignore_index = (p.flags & SY_CE_IGNORE_INDEX) != 0;
  r.labels64 = p.label_dtype.bits == 64;
  return r;
}

Smoothing smoothing_of(const sy_ce_problem& p) {
  Smoothing s;
  s.weight = smoothing_weight(p);
  s.uniform = s.weight / static_cast<double>(p.vocab_size);
  s.q_target = static_cast<float>((1.0 - s.weight) + s.uniform);
  s.q_other = static_cast<float>(s.uniform);
  return s;
}

// In place when send == recv. Enqueued on the stream; the communicator does not synchronise.
void all_reduce(const sy_comm& tp, const void* send, void* recv, int64_t count,
                DLDataType dtype, sy_reduce_op op, cudaStream_t stream, const char* what) {
  sy_error error{};
  error.struct_size = sizeof error;
  const sy_status status =
      tp.all_reduce(tp.ctx, send, recv, count, dtype, op, static_cast<void*>(stream), &error);
  if (status != SY_OK)
    sy::fail(status, std::string("tp->all_reduce of ") + what + " (" + std::to_string(count) +
                         " x " + sy::dtype_name(dtype) + ", rank " + std::to_string(tp.rank) +
                         " of " + std::to_string(tp.size) + ") failed: " +
                         (error.message[0] != '\0' ? error.message : "no message"));
}

// SY_CE_CHECK_LABELS: a kernel finds the lowest refused row; the host must know before anything
// is written (or any collective issued), so this waits for the stream. The only synchronisation
// of the native CUDA path.
void check_labels(const sy_ce_problem& p, const void* labels, const LabelRule& rule,
                  unsigned long long* first_bad, cudaStream_t stream) {
  if (p.rows == 0) return;
  check(cudaMemsetAsync(first_bad, 0xff, sizeof *first_bad, stream),
        "cudaMemsetAsync of the label-check flag");
  check(launch_check_labels(labels, p.rows, rule, first_bad, stream), "the label-check kernel");
  unsigned long long bad_row = kNoBadRow;
  check(cudaMemcpyAsync(&bad_row, first_bad, sizeof bad_row, cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync of the label-check flag");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (SY_CE_CHECK_LABELS)");
  if (bad_row == kNoBadRow) return;

  const int64_t row = static_cast<int64_t>(bad_row);
  int64_t label64 = 0;
  int32_t label32 = 0;
  void* host = rule.labels64 ? static_cast<void*>(&label64) : static_cast<void*>(&label32);
  const size_t bytes = rule.labels64 ? 8 : 4;
  check(cudaMemcpyAsync(host, static_cast<const char*>(labels) + row * static_cast<int64_t>(bytes),
                        bytes, cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync of the refused label");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (SY_CE_CHECK_LABELS)");
  sy::fail(SY_ERR_INVALID_ARGUMENT,
           bad_label_message(p, row, rule.labels64 ? label64 : static_cast<int64_t>(label32)));
}

void require_forward_memory(const sy_ce_forward_args& a) {
  const DLDevice device = a.problem->device;
  require_current_device(device);
  require_device_tensor(a.logits, "logits", device);
  require_device_tensor(a.labels, "labels", device);
  require_device_tensor(a.loss, "loss", device);
  require_device_tensor(a.lse, "lse", device);
  const uint32_t flags = a.problem->flags;
  if ((flags & SY_CE_ARGMAX) != 0) require_device_tensor(a.argmax, "argmax", device);
  if ((flags & SY_CE_GRAD_IN_FORWARD) != 0) {
    require_device_tensor(a.grad_scale, "grad_scale", device);
    require_device_tensor(a.grad_logits, "grad_logits", device);
  }
  require_device_memory(a.workspace, "workspace", device);
}

}  // namespace

int64_t ce_cuda_workspace_bytes(const sy_ce_problem& problem) {
  return CeWorkspace::layout(problem).total;
}

void ce_cuda_forward(const sy_ce_forward_args& a) {
  require_forward_memory(a);
  const sy_ce_problem& p = *a.problem;
  const int64_t n = p.rows;
  const int64_t vp = p.vocab_local;
  const int64_t zs = padded_columns(vp);
  const bool tensor_parallel = p.tp_size > 1;
  const bool want_argmax = (p.flags & SY_CE_ARGMAX) != 0;
  const Smoothing smoothing = smoothing_of(p);
  const bool smoothed = smoothing.weight != 0.0;
  const LabelRule rule = label_rule(p);
  const void* labels = data_of(a.labels);
  const cudaStream_t stream = static_cast<cudaStream_t>(a.stream);
  CeWorkspace ws(a.workspace, p);

  if ((p.flags & SY_CE_CHECK_LABELS) != 0) check_labels(p, labels, rule, ws.first_bad, stream);

  // logits.float(); torch.max(dim=-1) with the lowest index of the maximum.
  check(launch_upcast(matrix_of(a.logits), n, vp, ws.z, zs, stream), "the fp32 upcast kernel");
  check(launch_row_max(ws.z, n, vp, zs, ws.local_max, ws.argmax, stream), "the row-max kernel");

  // all_reduce(MAX); the lowest global index of the maximum: all_reduce(MIN).
  const float* global_max = ws.local_max;
  if (tensor_parallel) {
    all_reduce(*a.tp, ws.local_max, ws.global_max, n, sy::kF32, SY_REDUCE_MAX, stream,
               "the row maxima");
    global_max = ws.global_max;
    if (want_argmax) {
      check(launch_argmax_candidates(ws.local_max, ws.global_max, p.vocab_start, n, ws.argmax,
                                     stream),
            "the argmax-candidate kernel");
      all_reduce(*a.tp, ws.argmax, ws.argmax, n, sy::kI64, SY_REDUCE_MIN, stream,
                 "the argmax candidates");
    }
  }

  // z - max, the target logit, (sum of z - max), exp, sum of exp.
  float* target = ws.target_and_sum;
  float* sum_shifted = ws.target_and_sum + n;
  check(launch_subtract_max(ws.z, n, vp, zs, global_max, stream), "the subtract-max kernel");
  check(launch_gather_target(ws.z, n, vp, zs, labels, rule, target, stream),
        "the target-gather kernel");
  if (smoothed)
    check(launch_row_sum(ws.z, n, vp, zs, sum_shifted, stream),
          "the shifted-logit row-sum kernel");
  check(launch_exp(ws.z, n, vp, zs, stream), "the exp kernel");
  check(launch_row_sum(ws.z, n, vp, zs, ws.sum_exp, stream), "the exp row-sum kernel");

  if (tensor_parallel) {
    all_reduce(*a.tp, ws.target_and_sum, ws.target_and_sum, smoothed ? 2 * n : n, sy::kF32,
               SY_REDUCE_SUM, stream,
               smoothed ? "the target logits and sums of logits" : "the target logits");
    all_reduce(*a.tp, ws.sum_exp, ws.sum_exp, n, sy::kF32, SY_REDUCE_SUM, stream,
               "the sums of exponentials");
  }

  // log, loss, lse (and argmax).
  LossArgs loss;
  loss.rows = n;
  loss.global_max = global_max;
  loss.sum_exp = ws.sum_exp;
  loss.target = target;
  loss.sum_shifted = smoothed ? sum_shifted : nullptr;
  loss.argmax_in = want_argmax ? ws.argmax : nullptr;
  loss.labels = labels;
  loss.rule = rule;
  loss.smoothing = smoothing.weight;
  loss.loss = mutable_typed<float>(a.loss);
  loss.lse = mutable_typed<float>(a.lse);
  loss.argmax_out = want_argmax ? mutable_typed<int64_t>(a.argmax) : nullptr;
  check(launch_loss(loss, stream), "the loss kernel");

  if ((p.flags & SY_CE_GRAD_IN_FORWARD) != 0) {
    ForwardGradArgs grad;
    grad.rows = n;
    grad.vocab_local = vp;
    grad.exp_z = ws.z;
    grad.z_stride = zs;
    grad.sum_exp = ws.sum_exp;
    grad.grad_scale = typed<float>(a.grad_scale);
    grad.labels = labels;
    grad.rule = rule;
    grad.smoothing = smoothing;
    grad.grad = mutable_matrix_of(a.grad_logits);
    check(launch_forward_grad(grad, stream), "the gradient kernel (SY_CE_GRAD_IN_FORWARD)");
  }
}

void ce_cuda_backward(const sy_ce_backward_args& a) {
  const sy_ce_problem& p = *a.problem;
  const DLDevice device = p.device;
  require_current_device(device);
  require_device_tensor(a.logits, "logits", device);
  require_device_tensor(a.labels, "labels", device);
  require_device_tensor(a.lse, "lse", device);
  require_device_tensor(a.grad_loss, "grad_loss", device);
  require_device_tensor(a.grad_logits, "grad_logits", device);

  BackwardArgs b;
  b.rows = p.rows;
  b.vocab_local = p.vocab_local;
  b.logits = matrix_of(a.logits);
  b.labels = data_of(a.labels);
  b.lse = typed<float>(a.lse);
  b.grad_loss = typed<float>(a.grad_loss);
  b.rule = label_rule(p);
  b.smoothing = smoothing_of(p);
  b.grad = mutable_matrix_of(a.grad_logits);
  check(launch_backward(b, static_cast<cudaStream_t>(a.stream)), "the backward kernel");
}

}  // namespace switchyard::native::cuda
