#include "ce_validate.hpp"

#include "jit/dtype.hpp"
#include "tensor_layout.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cstdio>
#include <string>

namespace switchyard::fused {
namespace {

constexpr uint32_t kKnownFlags =
    SY_CE_IGNORE_INDEX | SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD | SY_CE_CHECK_LABELS;

std::string str(int64_t v) { return std::to_string(v); }

std::string real(float v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(v));
  return buffer;
}

std::string hex(uint32_t v) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%x", v);
  return buffer;
}

[[noreturn]] void invalid(const std::string& message) { sy::fail(SY_ERR_INVALID_ARGUMENT, message); }
[[noreturn]] void unsupported(const std::string& message) { sy::fail(SY_ERR_UNSUPPORTED, message); }

void check_data_dtype(DLDataType dtype, const char* field) {
  if (!jit::dtype_of(dtype))
    unsupported(std::string("problem.") + field + " = " + sy::dtype_name(dtype) +
                " is not supported by fused; supported: float32, bfloat16, float16");
}

void check_comm(const sy_comm* tp, const sy_ce_problem& p) {
  if (p.tp_size == 1) {
    if (tp != nullptr && tp->struct_size >= sizeof(sy_comm) && tp->size != 1)
      invalid("tp->size = " + str(tp->size) +
              " but problem.tp_size = 1; pass tp = NULL (or a single-rank communicator) for "
              "tensor parallelism 1, or set problem.tp_size = " + str(tp->size));
    return;  // not used
  }
  if (tp == nullptr)
    invalid("tp is NULL but problem.tp_size = " + str(p.tp_size) +
            "; pass this rank's tensor-parallel communicator (sy_comm over NCCL)");
  require_struct_size(tp->struct_size, sizeof(sy_comm), "tp");
  if (tp->size != p.tp_size)
    invalid("tp->size = " + str(tp->size) + " but problem.tp_size = " + str(p.tp_size) +
            "; the communicator must span exactly the ranks that share the vocabulary");
  if (tp->rank < 0 || tp->rank >= tp->size)
    invalid("tp->rank = " + str(tp->rank) + " is outside [0, " + str(tp->size) + ")");
  if (tp->all_reduce == nullptr) invalid("tp->all_reduce is NULL; fused needs all_reduce");
  if (!sy::same(tp->device, p.device))
    invalid("tp->device = " + sy::device_name(tp->device) + " but the tensors are on " +
            sy::device_name(p.device) + "; use a communicator for " + sy::device_name(p.device) +
            " buffers (libswitchyard-nccl)");
}

}  // namespace

void validate_ce_problem(const sy_ce_problem* problem) {
  if (problem == nullptr) invalid("problem is NULL");
  require_struct_size(problem->struct_size, sizeof(sy_ce_problem), "problem");
  const sy_ce_problem& p = *problem;
  if (p.rows < 0) invalid("problem.rows = " + str(p.rows) + " must be >= 0");
  if (p.vocab_local < 1) invalid("problem.vocab_local = " + str(p.vocab_local) + " must be >= 1");
  if (p.vocab_size < 1) invalid("problem.vocab_size = " + str(p.vocab_size) + " must be >= 1");
  if (p.vocab_start < 0) invalid("problem.vocab_start = " + str(p.vocab_start) + " must be >= 0");
  if (p.tp_size < 1) invalid("problem.tp_size = " + str(p.tp_size) + " must be >= 1");
  if (p.vocab_local > p.vocab_size - p.vocab_start)
    invalid("problem.vocab_start + vocab_local = " + str(p.vocab_start) + " + " +
            str(p.vocab_local) + " exceeds vocab_size = " + str(p.vocab_size) +
            ": this rank's columns must lie inside the global vocabulary [0, " +
            str(p.vocab_size) + ")");
  if (p.tp_size == 1 && (p.vocab_local != p.vocab_size || p.vocab_start != 0))
    invalid("problem.tp_size = 1 but vocab_local = " + str(p.vocab_local) + ", vocab_start = " +
            str(p.vocab_start) + " with vocab_size = " + str(p.vocab_size) +
            "; without tensor parallelism the logits hold the whole vocabulary "
            "(vocab_local = vocab_size, vocab_start = 0)");
  if (p.tp_size > 1 && p.vocab_local == p.vocab_size)
    invalid("problem.vocab_local = vocab_size = " + str(p.vocab_size) + " with tp_size = " +
            str(p.tp_size) +
            ": these look like gathered (full-vocabulary) logits; pass this rank's "
            "vocab-parallel slice (vocab_local < vocab_size, see Megatron-LM#7452) or use "
            "tp_size = 1");
  if (p.tp_size > p.vocab_size)
    invalid("problem.tp_size = " + str(p.tp_size) + " exceeds vocab_size = " + str(p.vocab_size) +
            "; every rank needs at least one column");
  check_data_dtype(p.logits_dtype, "logits_dtype");
  check_data_dtype(p.grad_dtype, "grad_dtype");
  if (!sy::same(p.label_dtype, sy::kI64) && !sy::same(p.label_dtype, sy::kI32))
    invalid("problem.label_dtype = " + sy::dtype_name(p.label_dtype) +
            "; labels must be int64 or int32");
  if (!(p.label_smoothing >= 0.0f && p.label_smoothing < 1.0f))
    invalid("problem.label_smoothing = " + real(p.label_smoothing) + " must be in [0, 1)");
  if (p.smoothing != SY_SMOOTHING_MEGATRON && p.smoothing != SY_SMOOTHING_PYTORCH)
    invalid("problem.smoothing = " + str(p.smoothing) +
            " is neither SY_SMOOTHING_MEGATRON (0) nor SY_SMOOTHING_PYTORCH (1)");
  if ((p.flags & ~kKnownFlags) != 0)
    unsupported("problem.flags has bits " + hex(p.flags & ~kKnownFlags) +
                " that fused does not know; it supports SY_CE_IGNORE_INDEX | SY_CE_ARGMAX | "
                "SY_CE_GRAD_IN_FORWARD | SY_CE_CHECK_LABELS (" + hex(kKnownFlags) + ")");
  if (p.device.device_type != kDLCUDA)
    unsupported("problem.device = " + sy::device_name(p.device) +
                ": fused runs on CUDA devices only (cuda:N); use native for CPU tensors");
  if (p.device.device_id < 0)
    invalid("problem.device = " + sy::device_name(p.device) + " has a negative device id");
  if (p.rows > kMaxCeRows)
    unsupported("problem.rows = " + str(p.rows) + " exceeds the " + str(kMaxCeRows) +
                " rows one call of fused handles (one CUDA grid row each); split the batch");
  if (p.vocab_local > kMaxVocabLocal)
    unsupported("problem.vocab_local = " + str(p.vocab_local) + " exceeds the " +
                str(kMaxVocabLocal) + " columns per rank fused handles (65535 blocks of 16384 columns); split the vocabulary over more ranks");
}

const sy_ce_problem& ce_problem_of(const sy_ce_forward_args* args) {
  if (args == nullptr) invalid("args is NULL");
  require_struct_size(args->struct_size, sizeof(sy_ce_forward_args), "args");
  if (args->problem == nullptr) invalid("args.problem is NULL");
  return *args->problem;
}

const sy_ce_problem& ce_problem_of(const sy_ce_backward_args* args) {
  if (args == nullptr) invalid("args is NULL");
  require_struct_size(args->struct_size, sizeof(sy_ce_backward_args), "args");
  if (args->problem == nullptr) invalid("args.problem is NULL");
  return *args->problem;
}

void validate_ce_forward(const sy_ce_forward_args* args, int64_t required_workspace_bytes) {
  const sy_ce_problem& p = ce_problem_of(args);
  const int64_t n = p.rows;
  sy::check_tensor(args->logits, "logits", p.logits_dtype, p.device, {n, p.vocab_local});
  sy::check_tensor(args->labels, "labels", p.label_dtype, p.device, {n});
  sy::check_tensor(args->loss, "loss", sy::kF32, p.device, {n});
  sy::check_tensor(args->lse, "lse", sy::kF32, p.device, {n});
  if ((p.flags & SY_CE_ARGMAX) != 0) {
    if (args->argmax == nullptr)
      invalid("argmax is NULL but problem.flags has SY_CE_ARGMAX; pass an int64 [" + str(n) +
              "] tensor or clear the flag");
    sy::check_tensor(args->argmax, "argmax", sy::kI64, p.device, {n});
  }
  if ((p.flags & SY_CE_GRAD_IN_FORWARD) != 0) {
    if (args->grad_scale == nullptr)
      invalid("grad_scale is NULL but problem.flags has SY_CE_GRAD_IN_FORWARD; pass the "
              "per-row upstream gradient as a float32 [" + str(n) + "] tensor");
    if (args->grad_logits == nullptr)
      invalid("grad_logits is NULL but problem.flags has SY_CE_GRAD_IN_FORWARD; pass a [" +
              str(n) + ", " + str(p.vocab_local) + "] " + sy::dtype_name(p.grad_dtype) +
              " tensor (it may be the logits themselves)");
    sy::check_tensor(args->grad_scale, "grad_scale", sy::kF32, p.device, {n});
    sy::check_tensor(args->grad_logits, "grad_logits", p.grad_dtype, p.device, {n, p.vocab_local});
    require_same_or_disjoint(args->grad_logits, "grad_logits", args->logits, "logits");
  }
  check_comm(args->tp, p);
  require_workspace(args->workspace, args->workspace_bytes, required_workspace_bytes);
}

void validate_ce_backward(const sy_ce_backward_args* args) {
  const sy_ce_problem& p = ce_problem_of(args);
  const int64_t n = p.rows;
  sy::check_tensor(args->logits, "logits", p.logits_dtype, p.device, {n, p.vocab_local});
  sy::check_tensor(args->labels, "labels", p.label_dtype, p.device, {n});
  sy::check_tensor(args->lse, "lse", sy::kF32, p.device, {n});
  sy::check_tensor(args->grad_loss, "grad_loss", sy::kF32, p.device, {n});
  sy::check_tensor(args->grad_logits, "grad_logits", p.grad_dtype, p.device, {n, p.vocab_local});
  require_same_or_disjoint(args->grad_logits, "grad_logits", args->logits, "logits");
}

}  // namespace switchyard::fused
