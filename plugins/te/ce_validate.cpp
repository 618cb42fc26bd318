#include "ce_validate.hpp"

#include "tensor_checks.hpp"

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/tensor_layout.hpp>

#include <limits>
#include <string>

namespace switchyard::te {
namespace {

constexpr int32_t kMaxTensorParallel = 65536;

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

void validate_ce_problem(const sy_ce_problem* problem) {
  sy::check_ce_problem(problem, "te");
  const sy_ce_problem& p = *problem;
  if ((p.flags & ~sy::kCeKnownFlags) != 0)
    sy::unsupported("problem.flags has bits " + sy::hex_text(p.flags & ~sy::kCeKnownFlags) +
                    " that te does not know; it supports SY_CE_IGNORE_INDEX | SY_CE_ARGMAX | "
                    "SY_CE_GRAD_IN_FORWARD (and refuses SY_CE_CHECK_LABELS)");
  if ((p.flags & SY_CE_CHECK_LABELS) != 0)
    sy::unsupported(
        "problem.flags has SY_CE_CHECK_LABELS, which te does not serve: naming the bad row and "
        "label in the returned error needs the labels on the host, a stream synchronisation "
        "that te never does (it declares SY_FEATURE_GRAPH_CAPTURE). Check the labels before "
        "the call, or select native for this problem. Without the flag, a label outside "
        "[0, vocab_size) gets loss = lse - max and no one-hot (Megatron's behaviour)");
  if (p.device.device_type != kDLCUDA)
    sy::unsupported("problem.device = " + sy::device_name(p.device) +
                    ": te runs on CUDA tensors only (cuda:N); use native for CPU tensors");
  if (p.rows > std::numeric_limits<int32_t>::max())
    sy::unsupported("problem.rows = " + str(p.rows) +
                    " exceeds te's limit of 2^31 - 1 rows per call (one CUDA block per row); "
                    "split the batch");
  if (p.tp_size > kMaxTensorParallel)
    sy::unsupported("problem.tp_size = " + str(p.tp_size) + " exceeds te's limit of " +
                    str(kMaxTensorParallel) + " ranks");
}

void validate_ce_forward(const sy_ce_forward_args& args, int64_t required_workspace_bytes) {
  const sy_ce_problem& p = *args.problem;
  sy::check_ce_forward_tensors(args, require_element_aligned);
  if ((p.flags & SY_CE_GRAD_IN_FORWARD) != 0)
    require_same_or_disjoint(args.grad_logits, "grad_logits", args.logits, "logits");
  sy::check_ce_comm(args.tp, p, sy::Collective::AllGather, "te");
  require_workspace(args.workspace, args.workspace_bytes, required_workspace_bytes);
}

void validate_ce_backward(const sy_ce_backward_args& args) {
  sy::check_ce_backward_tensors(args, require_element_aligned);
  require_same_or_disjoint(args.grad_logits, "grad_logits", args.logits, "logits");
}

}  // namespace switchyard::te
