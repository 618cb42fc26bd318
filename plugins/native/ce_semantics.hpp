// Cross-entropy quantities that every device path computes the same way (docs/semantics.md).
#ifndef SWITCHYARD_NATIVE_CE_SEMANTICS_HPP
#define SWITCHYARD_NATIVE_CE_SEMANTICS_HPP

#include <switchyard/loss.h>

#include <cstdint>
#include <string>

namespace switchyard::native {

// The smoothing weight s: 0 without smoothing; alpha (PyTorch); sigma = alpha V / (V - 1)
// (Megatron/NeMo), 0 when V == 1.
inline double smoothing_weight(const sy_ce_problem& p) {
  const double alpha = p.label_smoothing;
  if (alpha == 0.0) return 0.0;
  if (p.smoothing == SY_SMOOTHING_PYTORCH) return alpha;
  if (p.vocab_size <= 1) return 0.0;
  const double v = static_cast<double>(p.vocab_size);
  return alpha * v / (v - 1.0);
}

inline bool is_ignored(const sy_ce_problem& p, int64_t label) {
  return (p.flags & SY_CE_IGNORE_INDEX) != 0 && label == p.ignore_index;
}

// The local column of `label` on this rank, or -1 when another rank (or none) owns it.
inline int64_t local_column(const sy_ce_problem& p, int64_t label) {
  const int64_t column = label - p.vocab_start;
  return column >= 0 && column < p.vocab_local ? column : -1;
}

// The SY_CE_CHECK_LABELS refusal of labels[row] = label (the same words on every device).
inline std::string bad_label_message(const sy_ce_problem& p, int64_t row, int64_t label) {
  return "labels[" + std::to_string(row) + "] = " + std::to_string(label) +
         " is outside the vocabulary [0, " + std::to_string(p.vocab_size) + ")" +
         ((p.flags & SY_CE_IGNORE_INDEX) != 0
              ? " and is not ignore_index = " + std::to_string(p.ignore_index)
              : std::string()) +
         " (SY_CE_CHECK_LABELS); fix the label or mark the row with ignore_index";
}

}  // namespace switchyard::native

#endif
