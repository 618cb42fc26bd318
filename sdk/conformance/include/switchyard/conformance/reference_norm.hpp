// Float64 reference of the normalization family (docs/semantics.md, "Normalization").
// One row at a time, straight from the formulas.
#ifndef SWITCHYARD_CONFORMANCE_REFERENCE_NORM_HPP
#define SWITCHYARD_CONFORMANCE_REFERENCE_NORM_HPP

#include <switchyard/norm.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace switchyard::conformance {

struct NormReferenceProblem {
  sy_norm_kind kind = SY_NORM_RMS;
  int64_t rows = 0;
  int64_t hidden = 0;
  double eps = 1e-5;
  uint32_t flags = 0;  // SY_NORM_*
};

// Everything is [N, H] row-major unless noted. Empty vectors mean "not given".
struct NormReferenceForwardInput {
  std::vector<double> x;
  std::vector<double> residual;  // with SY_NORM_RESIDUAL
  std::vector<double> gamma;     // [H]; empty for L2
  std::vector<double> beta;      // [H]; LayerNorm only, optional
  // Rounds x + residual to the x dtype (h is stored in that dtype). Identity when empty.
  std::function<double(double)> round_to_x_dtype;
};

struct NormReferenceForward {
  std::vector<double> h;     // the normalised input (x, or round(x + residual))
  std::vector<double> y;     // not rounded; the comparison rounds to the y dtype
  std::vector<double> mean;  // [N] (LayerNorm; zeros otherwise)
  std::vector<double> rstd;  // [N]
  // Sums of the magnitudes of the terms of y (|x_hat * gamma_eff| + |beta|) and of h
  // (|x| + |residual|): the scales of their rounding errors.
  std::vector<double> y_magnitude;
  std::vector<double> h_magnitude;
};

struct NormReferenceBackwardInput {
  std::vector<double> dy;
  std::vector<double> x_or_y;  // h, or y with SY_NORM_MEMORY_EFFICIENT (as passed)
  std::vector<double> gamma;
  std::vector<double> beta;
  std::vector<double> mean;  // [N] as passed
  std::vector<double> rstd;  // [N] as passed
  std::vector<double> d_residual_out;
  std::vector<double> dgamma_initial;  // [H] with SY_NORM_ACCUMULATE_GRAD_WEIGHT
  std::vector<double> dbeta_initial;
};

struct NormReferenceBackward {
  std::vector<double> dx;
  // rstd * (|gh| + |mean(gh)| + |x_hat * mean(gh * x_hat)|) + |d_residual_out|.
  std::vector<double> dx_magnitude;
  std::vector<double> dgamma;  // [H]; empty for L2
  std::vector<double> dbeta;   // [H]; empty without beta
  // Sum over rows of |each term| (plus |initial|): the scale a row-sum's rounding error
  // grows with, used for its relative tolerance.
  std::vector<double> dgamma_scale;
  std::vector<double> dbeta_scale;
};

NormReferenceForward reference_norm_forward(const NormReferenceProblem& problem,
                                            const NormReferenceForwardInput& input);
NormReferenceBackward reference_norm_backward(const NormReferenceProblem& problem,
                                              const NormReferenceBackwardInput& input);

}  // namespace switchyard::conformance

#endif  // SWITCHYARD_CONFORMANCE_REFERENCE_NORM_HPP
