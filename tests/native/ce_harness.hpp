// Building cross-entropy problems, data and argument structs for the native suites.
#ifndef SWITCHYARD_TESTS_NATIVE_CE_HARNESS_HPP
#define SWITCHYARD_TESTS_NATIVE_CE_HARNESS_HPP

#include "native_support.hpp"
#include "reference.hpp"

#include <switchyard/loss.h>

namespace native_test {

sy_ce_problem make_ce_problem(int64_t rows, int64_t vocab, DLDataType logits_dtype = sy::kF32,
                              uint32_t flags = 0);

// Global data for a problem: logits already representable in `logits_dtype`, labels mostly
// in range, with row 1 = ignore_index (-100), row 2 out of range (vocab + 3) and row 3 a tie
// for the max at columns 5 and vocab - 2 (when the rows exist). Scales in [0.5, 2).
struct CeData {
  int64_t rows = 0, vocab = 0;
  std::vector<double> logits;
  std::vector<int64_t> labels;
  std::vector<double> grad_scale;
  std::vector<double> grad_loss;
};
CeData random_ce_data(int64_t rows, int64_t vocab, DLDataType logits_dtype, uint64_t seed,
                      bool special_rows = true);

CeReferenceInput reference_input(const sy_ce_problem& p, const CeData& data,
                                 const std::vector<double>& g);

// Tensors and workspace of one TP=1 call, filled from data; outputs poisoned.
struct CeSetup {
  sy_ce_problem problem{};
  Tensor logits, labels, loss, lse, argmax, grad_scale, grad_loss, grad;
  std::vector<uint64_t> workspace;
  int64_t workspace_bytes = 0;

  CeSetup(const sy_ce_problem& p, const CeData& data, int64_t logits_row_stride = 0);
  void poison_outputs();
  // Args with every tensor the flags call for; grad_logits = `grad` (or the logits with
  // in_place, which needs grad dtype == logits dtype).
  sy_ce_forward_args forward_args(bool in_place = false);
  sy_ce_backward_args backward_args(bool in_place = false);
};

}  // namespace native_test

#endif
