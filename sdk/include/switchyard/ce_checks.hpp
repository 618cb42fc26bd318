// The cross-entropy rules of the ABI (loss.h, DESIGN.md §3.8), checked the same way by every
// plugin: what a problem must be to mean anything, and which tensors a call must pass with
// which dtype and shape. Header-only, for plugin authors. Each check throws sy::Failure (caught
// by sy::guarded) with a sentence naming the argument, what was given and what is expected.
//
// What stays with each plugin: the flags, devices and sizes it serves beyond these rules,
// which of its outputs may alias which inputs (see <switchyard/tensor_layout.hpp>), and its
// workspace.
#ifndef SWITCHYARD_CE_CHECKS_HPP
#define SWITCHYARD_CE_CHECKS_HPP

#include <switchyard/plugin_helpers.hpp>

#include <cstdint>
#include <string>

namespace sy {

// Every cross-entropy request flag of ABI v1.0.
constexpr uint32_t kCeKnownFlags =
    SY_CE_IGNORE_INDEX | SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD | SY_CE_CHECK_LABELS;

// The args struct and its problem pointer, before anything else is read.
inline const sy_ce_problem& ce_problem_of(const sy_ce_forward_args* args) {
  if (args == nullptr) fail(SY_ERR_INVALID_ARGUMENT, "args is NULL");
  require_struct_size(args->struct_size, sizeof(sy_ce_forward_args), "args");
  if (args->problem == nullptr) fail(SY_ERR_INVALID_ARGUMENT, "args.problem is NULL");
  return *args->problem;
}

inline const sy_ce_problem& ce_problem_of(const sy_ce_backward_args* args) {
  if (args == nullptr) fail(SY_ERR_INVALID_ARGUMENT, "args is NULL");
  require_struct_size(args->struct_size, sizeof(sy_ce_backward_args), "args");
  if (args->problem == nullptr) fail(SY_ERR_INVALID_ARGUMENT, "args.problem is NULL");
  return *args->problem;
}

// The problem alone: geometry and the tensor-parallel partition, label dtype and smoothing
// (SY_ERR_INVALID_ARGUMENT: a request that cannot mean anything), and data dtypes other than
// float32, bfloat16 and float16 (SY_ERR_UNSUPPORTED, naming `plugin`). Flags, devices and
// limits are the plugin's to check after this.
inline void check_ce_problem(const sy_ce_problem* problem, const char* plugin) {
  const auto str = [](int64_t v) { return std::to_string(v); };
  if (problem == nullptr) invalid_argument("problem is NULL");
  require_struct_size(problem->struct_size, sizeof(sy_ce_problem), "problem");
  const sy_ce_problem& p = *problem;
  if (p.rows < 0) invalid_argument("problem.rows = " + str(p.rows) + " must be >= 0");
  if (p.vocab_local < 1)
    invalid_argument("problem.vocab_local = " + str(p.vocab_local) + " must be >= 1");
  if (p.vocab_size < 1)
    invalid_argument("problem.vocab_size = " + str(p.vocab_size) + " must be >= 1");
  if (p.vocab_start < 0)
    invalid_argument("problem.vocab_start = " + str(p.vocab_start) + " must be >= 0");
  if (p.tp_size < 1) invalid_argument("problem.tp_size = " + str(p.tp_size) + " must be >= 1");
  if (p.vocab_local > p.vocab_size - p.vocab_start)
    invalid_argument("problem.vocab_start + vocab_local = " + str(p.vocab_start) + " + " +
                     str(p.vocab_local) + " exceeds vocab_size = " + str(p.vocab_size) +
                     ": this rank's columns must lie inside the global vocabulary [0, " +
                     str(p.vocab_size) + ")");
  if (p.tp_size == 1 && (p.vocab_local != p.vocab_size || p.vocab_start != 0))
    invalid_argument("problem.tp_size = 1 but vocab_local = " + str(p.vocab_local) +
                     ", vocab_start = " + str(p.vocab_start) +
                     " with vocab_size = " + str(p.vocab_size) +
                     "; without tensor parallelism the logits hold the whole vocabulary "
                     "(vocab_local = vocab_size, vocab_start = 0)");
  if (p.tp_size > 1 && p.vocab_local == p.vocab_size)
    invalid_argument("problem.vocab_local = vocab_size = " + str(p.vocab_size) +
                     " with tp_size = " + str(p.tp_size) +
                     ": these look like gathered (full-vocabulary) logits; pass this rank's "
                     "vocab-parallel slice (vocab_local < vocab_size, see Megatron-LM#7452) or use "
                     "tp_size = 1");
  if (p.tp_size > p.vocab_size)
    invalid_argument("problem.tp_size = " + str(p.tp_size) + " exceeds vocab_size = " +
                     str(p.vocab_size) + "; every rank needs at least one column");
  require_data_dtype(p.logits_dtype, "logits_dtype", plugin);
  require_data_dtype(p.grad_dtype, "grad_dtype", plugin);
  if (!same(p.label_dtype, kI64) && !same(p.label_dtype, kI32))
    invalid_argument("problem.label_dtype = " + dtype_name(p.label_dtype) +
                     "; labels must be int64 or int32");
  if (!(p.label_smoothing >= 0.0f && p.label_smoothing < 1.0f))
    invalid_argument("problem.label_smoothing = " + float_text(p.label_smoothing) +
                     " must be in [0, 1)");
  if (p.smoothing != SY_SMOOTHING_MEGATRON && p.smoothing != SY_SMOOTHING_PYTORCH)
    invalid_argument("problem.smoothing = " + str(p.smoothing) +
                     " is neither SY_SMOOTHING_MEGATRON (0) nor SY_SMOOTHING_PYTORCH (1)");
}

// SY_ERR_UNSUPPORTED for flag bits outside ABI v1.0's, which `plugin` cannot know.
inline void require_known_ce_flags(uint32_t flags, const char* plugin) {
  if ((flags & ~kCeKnownFlags) != 0)
    fail(SY_ERR_UNSUPPORTED, "problem.flags has bits " + hex_text(flags & ~kCeKnownFlags) +
                                 " that " + plugin +
                                 " does not know; it supports SY_CE_IGNORE_INDEX | "
                                 "SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD | SY_CE_CHECK_LABELS (" +
                                 hex_text(kCeKnownFlags) + ")");
}

// The collective a plugin's forward issues over the tensor-parallel group.
enum class Collective { AllReduce, AllGather };

// The forward's communicator: unused (NULL or one rank) when tp_size = 1; otherwise present,
// of the problem's size and device, with a valid rank and the `needed` collective set.
inline void check_ce_comm(const sy_comm* tp, const sy_ce_problem& p, Collective needed,
                          const char* plugin) {
  const auto str = [](int64_t v) { return std::to_string(v); };
  if (p.tp_size == 1) {
    if (tp != nullptr && tp->struct_size >= sizeof(sy_comm) && tp->size != 1)
      invalid_argument(
          "tp->size = " + str(tp->size) +
          " but problem.tp_size = 1; pass tp = NULL (or a single-rank communicator) for "
          "tensor parallelism 1, or set problem.tp_size = " + str(tp->size));
    return;  // not used
  }
  // Device buffers travel over NCCL (libswitchyard-nccl); host buffers over any sy_comm.
  const bool on_cuda = p.device.device_type == kDLCUDA;
  if (tp == nullptr)
    invalid_argument("tp is NULL but problem.tp_size = " + str(p.tp_size) +
                     "; pass this rank's tensor-parallel communicator (sy_comm" +
                     (on_cuda ? " over NCCL" : "") + ")");
  require_struct_size(tp->struct_size, sizeof(sy_comm), "tp");
  if (tp->size != p.tp_size)
    invalid_argument("tp->size = " + str(tp->size) + " but problem.tp_size = " + str(p.tp_size) +
                     "; the communicator must span exactly the ranks that share the vocabulary");
  if (tp->rank < 0 || tp->rank >= tp->size)
    invalid_argument("tp->rank = " + str(tp->rank) + " is outside [0, " + str(tp->size) + ")");
  const bool gather = needed == Collective::AllGather;
  if ((gather ? tp->all_gather == nullptr : tp->all_reduce == nullptr)) {
    const std::string name = gather ? "all_gather" : "all_reduce";
    invalid_argument("tp->" + name + " is NULL; " + plugin + " needs " + name);
  }
  if (!same(tp->device, p.device))
    invalid_argument("tp->device = " + device_name(tp->device) + " but the tensors are on " +
                     device_name(p.device) + "; use a communicator for " + device_name(p.device) +
                     " buffers" + (on_cuda ? " (libswitchyard-nccl)" : ""));
}

// Forward tensors (after check_ce_problem): logits, labels, loss and lse; argmax with
// SY_CE_ARGMAX; grad_scale and grad_logits with SY_CE_GRAD_IN_FORWARD. `extra`, when set, runs
// on each of them after sy::check_tensor.
inline void check_ce_forward_tensors(const sy_ce_forward_args& args, TensorRule extra = nullptr) {
  const sy_ce_problem& p = *args.problem;
  const int64_t n = p.rows;
  const TensorChecker check(p.device, extra);
  check(args.logits, "logits", p.logits_dtype, {n, p.vocab_local});
  check(args.labels, "labels", p.label_dtype, {n});
  check(args.loss, "loss", kF32, {n});
  check(args.lse, "lse", kF32, {n});
  if ((p.flags & SY_CE_ARGMAX) != 0) {
    if (args.argmax == nullptr)
      fail(SY_ERR_INVALID_ARGUMENT,
           "argmax is NULL but problem.flags has SY_CE_ARGMAX; pass an int64 [" +
               std::to_string(n) + "] tensor or clear the flag");
    check(args.argmax, "argmax", kI64, {n});
  }
  if ((p.flags & SY_CE_GRAD_IN_FORWARD) != 0) {
    if (args.grad_scale == nullptr)
      fail(SY_ERR_INVALID_ARGUMENT,
           "grad_scale is NULL but problem.flags has SY_CE_GRAD_IN_FORWARD; pass the per-row "
           "upstream gradient as a float32 [" +
               std::to_string(n) + "] tensor");
    if (args.grad_logits == nullptr)
      fail(SY_ERR_INVALID_ARGUMENT,
           "grad_logits is NULL but problem.flags has SY_CE_GRAD_IN_FORWARD; pass a [" +
               std::to_string(n) + ", " + std::to_string(p.vocab_local) + "] " +
               dtype_name(p.grad_dtype) + " tensor (it may be the logits themselves)");
    check(args.grad_scale, "grad_scale", kF32, {n});
    check(args.grad_logits, "grad_logits", p.grad_dtype, {n, p.vocab_local});
  }
}

// Backward tensors (after check_ce_problem): logits, labels, lse, grad_loss and grad_logits.
inline void check_ce_backward_tensors(const sy_ce_backward_args& args, TensorRule extra = nullptr) {
  const sy_ce_problem& p = *args.problem;
  const int64_t n = p.rows;
  const TensorChecker check(p.device, extra);
  check(args.logits, "logits", p.logits_dtype, {n, p.vocab_local});
  check(args.labels, "labels", p.label_dtype, {n});
  check(args.lse, "lse", kF32, {n});
  check(args.grad_loss, "grad_loss", kF32, {n});
  check(args.grad_logits, "grad_logits", p.grad_dtype, {n, p.vocab_local});
}

}  // namespace sy

#endif  // SWITCHYARD_CE_CHECKS_HPP
