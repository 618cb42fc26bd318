// Forward:
//   [SY_CE_CHECK_LABELS] check kernel, read one word back (a host sync; see README)
//   sy_ce_max        row max (+ lowest column)                     -> ws.gmax, ws.keys
//   1. all_reduce(MAX) of ws.gmax                                   [tp_size > 1]
//   sy_ce_sum        z_t - max | sum exp(z - max) | sum (z - max)   -> ws.red (+ ws.cand)
//   2. all_reduce(SUM) of ws.red (2N, or 3N with smoothing)         [tp_size > 1]
//   3. all_reduce(MIN) of ws.cand, int64                            [tp_size > 1, SY_CE_ARGMAX]
//   sy_ce_loss       lse, loss, argmax                              -> caller's tensors
//   [SY_CE_GRAD_IN_FORWARD] sy_ce_grad                              -> grad_logits
// Nothing the caller reads is written before the last collective; only the workspace is.
// Backward: sy_ce_grad alone, from the caller's lse (no collective, no workspace).
#include "ce_run.hpp"

#include "jit/kernel_args.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <string>

namespace switchyard::fused {
namespace {

constexpr int64_t kAlignment = 256;

int64_t align_up(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

int64_t element_bytes(const DLTensor& t) { return (t.dtype.bits * t.dtype.lanes + 7) / 8; }

// The smoothing weight s of docs/semantics.md, in double.
double smoothing_weight(const sy_ce_problem& p) {
  const double alpha = p.label_smoothing;
  if (alpha == 0.0) return 0.0;
  if (p.smoothing == SY_SMOOTHING_PYTORCH) return alpha;
  if (p.vocab_size <= 1) return 0.0;
  const double v = static_cast<double>(p.vocab_size);
  return alpha * v / (v - 1.0);
}

void all_reduce(const sy_comm& tp, void* buffer, int64_t count, DLDataType dtype, sy_reduce_op op,
                void* stream, const char* what) {
  sy_error error{};
  error.struct_size = sizeof error;
  const sy_status status = tp.all_reduce(tp.ctx, buffer, buffer, count, dtype, op, stream, &error);
  if (status != SY_OK)
    sy::fail(status, std::string("tp->all_reduce of ") + what + " (" + std::to_string(count) + " x " +
                         sy::dtype_name(dtype) + ", rank " + std::to_string(tp.rank) + " of " +
                         std::to_string(tp.size) + ") failed: " +
                         (error.message[0] != '\0' ? error.message : "no message"));
}

uint32_t blocks_for(int64_t rows, int threads) {
  return static_cast<uint32_t>((rows + threads - 1) / threads);
}

// The kernel argument struct common to forward and backward.
jit::CeKernelArgs common_args(const sy_ce_problem& p, const DLTensor& logits, const DLTensor& labels) {
  jit::CeKernelArgs a{};
  a.logits = sy::data_as<const char>(logits);
  a.logits_stride = sy::row_stride(logits) * element_bytes(logits);
  a.labels = sy::data_as<const char>(labels);
  a.rows = p.rows;
  a.vocab_start = p.vocab_start;
  a.vocab_size = p.vocab_size;
  a.ignore_index = p.ignore_index;
  a.flags = ((p.flags & SY_CE_IGNORE_INDEX) != 0 ? jit::kCeIgnoreIndex : 0) |
            (p.tp_size > 1 ? jit::kCeTensorParallel : 0);
  const double s = smoothing_weight(p);
  const double v = static_cast<double>(p.vocab_size);
  a.smoothing = s;
  a.q_other = s / v;
  a.q_target = (1.0 - s) + s / v;
  return a;
}

void point_at_grad(jit::CeKernelArgs& a, const DLTensor& grad) {
  a.grad = sy::data_as<char>(grad);
  a.grad_stride = sy::row_stride(grad) * element_bytes(grad);
}

std::string bad_label_message(const sy_ce_problem& p, int64_t row, int64_t label) {
  return "labels[" + std::to_string(row) + "] = " + std::to_string(label) +
         " is outside the vocabulary [0, " + std::to_string(p.vocab_size) +
         ") (SY_CE_CHECK_LABELS; row " + std::to_string(row) +
         "); nothing was written. Fix the label, or mark such rows with SY_CE_IGNORE_INDEX and "
         "problem.ignore_index";
}

// SY_CE_CHECK_LABELS: the only host synchronisation fused ever does, asked for by the flag.
void check_labels(const sy_ce_problem& p, const jit::CeKernelArgs& a, const DLTensor& labels,
                  const CeKernels& kernels, Device& device, void* stream) {
  device.fill(a.ws_bad, 0, sizeof(uint64_t), stream);
  if (p.rows > 0)
    device.launch(kernels[jit::kCeCheckLabels],
                  {blocks_for(p.rows, jit::kCeRowThreads), 1, jit::kCeRowThreads}, &a,
                  "sy_ce_check_labels", stream);
  uint64_t bad = 0;
  device.read(&bad, a.ws_bad, sizeof bad, stream);
  if (bad == 0) return;
  const int64_t row = p.rows - static_cast<int64_t>(bad);
  int64_t label = 0;
  if (sy::same(p.label_dtype, sy::kI64)) {
    device.read(&label, sy::data_as<const int64_t>(labels) + row, sizeof label, stream);
  } else {
    int32_t narrow = 0;
    device.read(&narrow, sy::data_as<const int32_t>(labels) + row, sizeof narrow, stream);
    label = narrow;
  }
  sy::fail(SY_ERR_INVALID_ARGUMENT, bad_label_message(p, row, label));
}

}  // namespace

jit::CeSpecialization ce_specialization(const sy_ce_problem& p) {
  jit::CeSpecialization spec;
  spec.logits = *jit::dtype_of(p.logits_dtype);
  spec.grad = *jit::dtype_of(p.grad_dtype);
  spec.labels64 = sy::same(p.label_dtype, sy::kI64);
  spec.vocab_local = p.vocab_local;
  spec.smoothing = p.label_smoothing != 0.0f;
  spec.argmax = (p.flags & SY_CE_ARGMAX) != 0;
  return spec;
}

CeWorkspace CeWorkspace::of(const sy_ce_problem& p) {
  const jit::CeLayout layout = jit::CeLayout::of(ce_specialization(p));
  const int64_t n = p.rows;
  const int64_t chunks = layout.chunks;
  CeWorkspace w;
  int64_t at = 0;
  auto take = [&](int64_t bytes) {
    const int64_t offset = at;
    at += align_up(bytes);
    return offset;
  };
  w.gmax = take(n * 4);
  w.red = take(3 * n * 4);
  w.keys = take(n * 8);
  if ((p.flags & SY_CE_ARGMAX) != 0) w.cand = take(n * 8);
  if (chunks > 1) {
    w.count = take(2 * n * 4);
    w.pkeys = take(n * chunks * 8);
    w.psum = take(n * chunks * 2 * 4);
  }
  if ((p.flags & SY_CE_CHECK_LABELS) != 0) w.bad = take(8);
  w.bytes = at;
  return w;
}

int64_t ce_workspace_bytes(const sy_ce_problem& problem) { return CeWorkspace::of(problem).bytes; }

int32_t ce_forward_collectives(const sy_ce_problem& p) {
  if (p.tp_size <= 1) return 0;
  return 2 + ((p.flags & SY_CE_ARGMAX) != 0 ? 1 : 0);
}

void ce_forward(const sy_ce_forward_args& args, const CeKernels& kernels, Device& device) {
  const sy_ce_problem& p = *args.problem;
  const jit::CeSpecialization spec = ce_specialization(p);
  const jit::CeLayout layout = jit::CeLayout::of(spec);
  const CeWorkspace w = CeWorkspace::of(p);
  char* base = static_cast<char*>(args.workspace);
  auto at = [&](int64_t offset) -> char* { return offset < 0 ? nullptr : base + offset; };
  const int64_t n = p.rows;
  void* stream = args.stream;

  jit::CeKernelArgs a = common_args(p, *args.logits, *args.labels);
  a.loss = sy::data_as<float>(*args.loss);
  a.lse = sy::data_as<float>(*args.lse);
  a.argmax = spec.argmax ? sy::data_as<jit::sy_i64>(*args.argmax) : nullptr;
  a.ws_gmax = reinterpret_cast<float*>(at(w.gmax));
  a.ws_red = reinterpret_cast<float*>(at(w.red));
  a.ws_keys = reinterpret_cast<jit::sy_u64*>(at(w.keys));
  a.ws_cand = reinterpret_cast<jit::sy_i64*>(at(w.cand));
  a.ws_count = reinterpret_cast<jit::sy_u32*>(at(w.count));
  a.ws_pkeys = reinterpret_cast<jit::sy_u64*>(at(w.pkeys));
  a.ws_psum = reinterpret_cast<float*>(at(w.psum));
  a.ws_bad = reinterpret_cast<jit::sy_u64*>(at(w.bad));

  if ((p.flags & SY_CE_CHECK_LABELS) != 0) check_labels(p, a, *args.labels, kernels, device, stream);

  const LaunchShape row_grid{static_cast<uint32_t>(n), static_cast<uint32_t>(layout.chunks),
                             static_cast<uint32_t>(layout.threads)};
  const LaunchShape per_row{blocks_for(n, jit::kCeRowThreads), 1, jit::kCeRowThreads};
  const bool tensor_parallel = p.tp_size > 1;
  if (n > 0) {
    if (layout.chunks > 1) device.fill(a.ws_count, 0, static_cast<size_t>(2 * n * 4), stream);
    device.launch(kernels[jit::kCeMax], row_grid, &a, "sy_ce_max", stream);
  }
  if (tensor_parallel)
    all_reduce(*args.tp, a.ws_gmax, n, sy::kF32, SY_REDUCE_MAX, stream, "the row maxima");
  if (n > 0) device.launch(kernels[jit::kCeSum], row_grid, &a, "sy_ce_sum", stream);
  if (tensor_parallel) {
    all_reduce(*args.tp, a.ws_red, (spec.smoothing ? 3 : 2) * n, sy::kF32, SY_REDUCE_SUM, stream,
               spec.smoothing ? "[target logit | sum of exp | sum of logits]"
                              : "[target logit | sum of exp]");
    if (spec.argmax)
      all_reduce(*args.tp, a.ws_cand, n, sy::kI64, SY_REDUCE_MIN, stream,
                 "the argmax candidates (lowest global id of the max)");
  }
  if (n > 0) device.launch(kernels[jit::kCeLoss], per_row, &a, "sy_ce_loss", stream);
  if ((p.flags & SY_CE_GRAD_IN_FORWARD) != 0 && n > 0) {
    point_at_grad(a, *args.grad_logits);
    a.lse_in = a.lse;
    a.grad_scale = sy::data_as<const float>(*args.grad_scale);
    device.launch(kernels[jit::kCeGrad], row_grid, &a, "sy_ce_grad", stream);
  }
}

void ce_backward(const sy_ce_backward_args& args, const CeKernels& kernels, Device& device) {
  const sy_ce_problem& p = *args.problem;
  if (p.rows == 0) return;
  const jit::CeLayout layout = jit::CeLayout::of(ce_specialization(p));
  jit::CeKernelArgs a = common_args(p, *args.logits, *args.labels);
  point_at_grad(a, *args.grad_logits);
  a.lse_in = sy::data_as<const float>(*args.lse);
  a.grad_scale = sy::data_as<const float>(*args.grad_loss);
  const LaunchShape row_grid{static_cast<uint32_t>(p.rows), static_cast<uint32_t>(layout.chunks),
                             static_cast<uint32_t>(layout.threads)};
  device.launch(kernels[jit::kCeGrad], row_grid, &a, "sy_ce_grad", args.stream);
}

}  // namespace switchyard::fused
