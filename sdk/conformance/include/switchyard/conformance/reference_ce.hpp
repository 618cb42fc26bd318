// Float64 reference of the cross-entropy family (docs/semantics.md, "Cross entropy").
// Written from the formulas, one row at a time over the GLOBAL vocabulary; it knows nothing
// about tensor parallelism, dtypes or any plugin.
#ifndef SWITCHYARD_CONFORMANCE_REFERENCE_CE_HPP
#define SWITCHYARD_CONFORMANCE_REFERENCE_CE_HPP

#include <switchyard/loss.h>

#include <cstdint>
#include <vector>

namespace switchyard::conformance {

struct CeReferenceProblem {
  int64_t rows = 0;
  int64_t vocab = 0;  // V, the global vocabulary
  double label_smoothing = 0;
  sy_smoothing smoothing = SY_SMOOTHING_MEGATRON;
  int64_t ignore_index = -100;
  uint32_t flags = 0;  // SY_CE_* (only SY_CE_IGNORE_INDEX changes the math)
};

struct CeReferenceForward {
  std::vector<double> loss;            // [N]
  std::vector<double> lse;             // [N]
  std::vector<int64_t> argmax;         // [N] global id, lowest on ties
  std::vector<double> grad;            // [N, V] grad_scale_i * (p - q); empty without grad_scale
  std::vector<double> grad_magnitude;  // [N, V] |g| * (p + q): the scale of grad's rounding
};

struct CeReferenceGradient {
  std::vector<double> grad;            // [N, V]
  std::vector<double> grad_magnitude;  // [N, V] |g| * (p + q)
};

// The smoothing weight s: 0, alpha (PyTorch) or alpha*V/(V-1) (Megatron; 0 when V == 1).
double smoothing_weight(const CeReferenceProblem& problem);

// True when the row's label is ignored (SY_CE_IGNORE_INDEX set and label == ignore_index).
bool row_ignored(const CeReferenceProblem& problem, int64_t label);

// logits: [N, V] row-major, the values as the plugin sees them (already rounded to the
// logits dtype). grad_scale: [N], or nullptr for no gradient.
CeReferenceForward reference_ce_forward(const CeReferenceProblem& problem,
                                        const std::vector<double>& logits,
                                        const std::vector<int64_t>& labels,
                                        const std::vector<double>* grad_scale);

// Backward from the lse the caller passes (so it is exactly what the plugin is given):
// grad_loss_i * (exp(z - lse_i) - q).
CeReferenceGradient reference_ce_backward(const CeReferenceProblem& problem,
                                          const std::vector<double>& logits,
                                          const std::vector<int64_t>& labels,
                                          const std::vector<double>& lse,
                                          const std::vector<double>& grad_loss);

}  // namespace switchyard::conformance

#endif  // SWITCHYARD_CONFORMANCE_REFERENCE_CE_HPP
