// Float64 references for the native suites, written straight from docs/semantics.md.
#ifndef SWITCHYARD_TESTS_NATIVE_REFERENCE_HPP
#define SWITCHYARD_TESTS_NATIVE_REFERENCE_HPP

#include <switchyard/loss.h>
#include <switchyard/norm.h>

#include <cstdint>
#include <vector>

namespace native_test {

struct CeReferenceInput {
  int64_t rows = 0;
  int64_t vocab = 0;
  std::vector<double> logits;  // [rows, vocab], the values the plugin sees
  std::vector<int64_t> labels;
  std::vector<double> g;       // upstream gradient per row
  double alpha = 0;
  sy_smoothing smoothing = SY_SMOOTHING_MEGATRON;
  bool ignore = false;
  int64_t ignore_index = -100;
};

struct CeReference {
  std::vector<double> loss, lse, grad;  // grad [rows, vocab]
  std::vector<int64_t> argmax;
};

CeReference ce_reference(const CeReferenceInput& in);

struct NormReferenceInput {
  sy_norm_kind kind = SY_NORM_RMS;
  int64_t rows = 0;
  int64_t hidden = 0;
  double eps = 1e-5;
  std::vector<double> h;      // [rows, hidden]: the normalised input (x, or x + residual rounded)
  std::vector<double> gamma;  // gamma_eff [hidden]; empty for L2
  std::vector<double> beta;   // [hidden]; empty = 0
  std::vector<double> dy;     // [rows, hidden]; empty = no backward
};

struct NormReference {
  std::vector<double> y, mean, rstd;    // forward
  std::vector<double> dx, dgamma, dbeta;  // backward (dx without the residual gradient)
};

NormReference norm_reference(const NormReferenceInput& in);

}  // namespace native_test

#endif
