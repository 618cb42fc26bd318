#include "ce_data.hpp"

#include <algorithm>
#include <switchyard/conformance/compare.hpp>

#include "check_helpers.hpp"
#include "random_data.hpp"

namespace switchyard::conformance {

std::vector<int64_t> rank_starts(const std::vector<int64_t>& split) {
  std::vector<int64_t> starts(split.size(), 0);
  for (size_t r = 1; r < split.size(); ++r) starts[r] = starts[r - 1] + split[r - 1];
  return starts;
}

CeData make_ce_data(const CeSpec& spec) {
  Random random(spec.seed);
  CeData d;
  d.rows = spec.rows;
  d.vocab = spec.vocab;
  const int64_t v = spec.vocab;
  d.logits.resize(static_cast<size_t>(d.rows * v));
  for (int64_t i = 0; i < d.rows; ++i) {
    // Every third row sits far from zero: a plugin that skips the max subtraction overflows.
    const double offset = i % 3 == 2 ? 40.0 : 0.0;
    for (int64_t j = 0; j < v; ++j)
      d.logits[i * v + j] = round_to_dtype(offset + random.nonzero(0.05, 4.0), spec.logits_dtype);
  }
  if (spec.argmax_ties && v >= 2) {
    const auto starts = rank_starts(spec.split);
    const int tp = static_cast<int>(spec.split.size());
    for (int64_t i = 0; i < d.rows; ++i) {
      int64_t a, b;
      if (tp > 1) {  // the two maxima on two different ranks, the lower id on the lower rank
        const int low = static_cast<int>(i % (tp - 1));
        const int high = static_cast<int>(low + 1 + random.integer(0, tp - 1 - low));
        a = starts[low] + random.integer(0, spec.split[low]);
        b = starts[high] + random.integer(0, spec.split[high]);
      } else {
        a = random.integer(0, v - 1);
        b = random.integer(a + 1, v);
      }
      double* row = d.logits.data() + i * v;
      const double top = round_to_dtype(*std::max_element(row, row + v) + 1.0, spec.logits_dtype);
      row[a] = top;
      row[b] = top;
    }
  }
  const bool check = has_flag(spec.flags, SY_CE_CHECK_LABELS);
  const bool ignore = has_flag(spec.flags, SY_CE_IGNORE_INDEX);
  d.labels.resize(static_cast<size_t>(d.rows));
  for (int64_t i = 0; i < d.rows; ++i) {
    int64_t label = random.integer(0, v);
    if (i % 7 == 3 && (ignore || !check)) label = spec.ignore_index;  // ignored, or out of range
    if (i % 7 == 5 && !check) label = i % 2 != 0 ? -1 : v + i;        // owned by no rank
    d.labels[i] = label;
  }
  if (spec.check == CeCheck::BadLabelRefused) {
    d.bad_row = std::max<int64_t>(0, d.rows - 2);
    d.bad_label = v + 7919;
    d.labels[d.bad_row] = d.bad_label;
  }
  for (int64_t i = 0; i < d.rows; ++i) {
    d.grad_scale.push_back(random.uniform(0.05, 1.05));
    d.grad_loss.push_back(random.uniform(0.05, 1.05));
  }
  return d;
}

CeData ce_data_rows(const CeData& d, int64_t begin, int64_t end) {
  CeData s = d;
  s.rows = end - begin;
  s.logits.assign(d.logits.begin() + begin * d.vocab, d.logits.begin() + end * d.vocab);
  s.labels.assign(d.labels.begin() + begin, d.labels.begin() + end);
  s.grad_scale.assign(d.grad_scale.begin() + begin, d.grad_scale.begin() + end);
  s.grad_loss.assign(d.grad_loss.begin() + begin, d.grad_loss.begin() + end);
  return s;
}

CeReferenceProblem ce_reference_problem(const CeSpec& spec, int64_t rows) {
  CeReferenceProblem p;
  p.rows = rows;
  p.vocab = spec.vocab;
  p.label_smoothing = static_cast<double>(spec.label_smoothing);  // the float the plugin sees
  p.smoothing = spec.smoothing;
  p.ignore_index = spec.ignore_index;
  p.flags = spec.flags;
  return p;
}

}  // namespace switchyard::conformance
