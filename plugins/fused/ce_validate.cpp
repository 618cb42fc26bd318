#include "ce_validate.hpp"

#include "problem_device.hpp"

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/tensor_layout.hpp>

#include <string>

namespace switchyard::fused {

void validate_ce_problem(const sy_ce_problem* problem) {
  sy::check_ce_problem(problem, "fused");
  const sy_ce_problem& p = *problem;
  sy::require_known_ce_flags(p.flags, "fused");
  require_cuda_problem_device(p.device);
  if (p.rows > kMaxCeRows)
    sy::unsupported("problem.rows = " + std::to_string(p.rows) + " exceeds the " +
                    std::to_string(kMaxCeRows) +
                    " rows one call of fused handles (one CUDA grid row each); split the batch");
  if (p.vocab_local > kMaxVocabLocal)
    sy::unsupported("problem.vocab_local = " + std::to_string(p.vocab_local) + " exceeds the " +
                    std::to_string(kMaxVocabLocal) +
                    " columns per rank fused handles (65535 blocks of 16384 columns); split the "
                    "vocabulary over more ranks");
}

void validate_ce_forward(const sy_ce_forward_args* args, int64_t required_workspace_bytes) {
  const sy_ce_problem& p = ce_problem_of(args);
  sy::check_ce_forward_tensors(*args);
  if ((p.flags & SY_CE_GRAD_IN_FORWARD) != 0)
    sy::require_same_or_disjoint(args->grad_logits, "grad_logits", args->logits, "logits");
  sy::check_ce_comm(args->tp, p, sy::Collective::AllReduce, "fused");
  sy::require_workspace(args->workspace, args->workspace_bytes, required_workspace_bytes,
                        "fused");
}

void validate_ce_backward(const sy_ce_backward_args* args) {
  ce_problem_of(args);
  sy::check_ce_backward_tensors(*args);
  sy::require_same_or_disjoint(args->grad_logits, "grad_logits", args->logits, "logits");
}

}  // namespace switchyard::fused
