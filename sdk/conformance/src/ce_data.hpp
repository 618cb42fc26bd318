// The data of one cross-entropy case: the global problem's inputs before they are split
// across ranks, generated from the case's seed.
#ifndef SWITCHYARD_CONFORMANCE_CE_DATA_HPP
#define SWITCHYARD_CONFORMANCE_CE_DATA_HPP

#include <cstdint>
#include <switchyard/conformance/reference_ce.hpp>
#include <vector>

#include "ce_case.hpp"

namespace switchyard::conformance {

struct CeData {
  int64_t rows = 0;
  int64_t vocab = 0;
  std::vector<double> logits;  // [rows, vocab], exactly representable in the logits dtype
  std::vector<int64_t> labels;
  std::vector<double> grad_scale;  // forward's g (grad in forward)
  std::vector<double> grad_loss;   // backward's g
  int64_t bad_row = -1;            // CeCheck::BadLabelRefused: where the bad label is
  int64_t bad_label = 0;
};

// Global id of each rank's first column.
std::vector<int64_t> rank_starts(const std::vector<int64_t>& split);

// Logits never zero, every third row offset far from zero; labels with ignored rows and
// (without SY_CE_CHECK_LABELS) labels owned by no rank; upstream gradients in [0.05, 1.05).
CeData make_ce_data(const CeSpec& spec);

// Rows [begin, end).
CeData ce_data_rows(const CeData& data, int64_t begin, int64_t end);

CeReferenceProblem ce_reference_problem(const CeSpec& spec, int64_t rows);

}  // namespace switchyard::conformance

#endif
