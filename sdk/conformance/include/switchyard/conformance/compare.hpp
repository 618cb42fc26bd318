// Tolerances of docs/semantics.md ("Tolerances") and the comparison that finds the worst
// element of an output against the float64 reference.
#ifndef SWITCHYARD_CONFORMANCE_COMPARE_HPP
#define SWITCHYARD_CONFORMANCE_COMPARE_HPP

#include <dlpack/dlpack.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::conformance {

// An element passes when |got - target| <= rtol * scale + atol + ulps * ulp(target).
// target is the expected value, correctly rounded to `dtype` when ulps > 0 (16-bit outputs).
// scale is |expected| unless the caller gives one per element: the reference gives the sum
// of the magnitudes of the terms that make up the value (g*(p + q) for a CE gradient, the
// three terms of dx, ...), because a value that is a small difference of large terms carries
// the rounding error of the terms — RMSNorm's dx at H = 1 is eps/(h^2 + eps) of its terms,
// and no fp32 implementation gets it to 1e-5 of itself. NaN (the poison of unwritten
// outputs) never passes.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
  int ulps = 0;
  DLDataType dtype{kDLFloat, 32, 1};
};

// loss, lse, mean, rstd (fp32 outputs): rtol 1e-5 for fp32 inputs, 1e-3 for bf16/fp16 inputs;
// atol = rtol/10 * max|expected| so that values near zero are judged on the tensor's scale.
Tolerance statistic_tolerance(DLDataType input_dtype, double max_abs_expected);
// Gradients, y, dx, h: rtol 1e-5 (of the terms' magnitude) + atol 1e-6 * max|expected|, and
// for bf16/fp16 OUTPUTS 2 ulp of the correctly rounded value on top. (docs/semantics.md
// allows 1 ulp where a plugin claims single rounding; the ABI has no field to claim it, so
// every plugin gets the 2-ulp bound.)
Tolerance elementwise_tolerance(DLDataType output_dtype, double max_abs_expected);
// dgamma, dbeta (sums over rows): rtol 1e-4 (fp32 inputs) / 1e-2 (bf16/fp16 inputs), of the
// sum of |terms| (NormReferenceBackward::*_scale).
Tolerance row_sum_tolerance(DLDataType input_dtype);

struct Mismatch {
  int64_t index = 0;  // flat index of the worst element
  double got = 0;
  double expected = 0;
  double allowed = 0;  // the tolerance at that element
  int64_t count = 0;   // elements out of tolerance
  int64_t total = 0;   // elements compared
};

// Returns the worst element out of tolerance, or nothing when all pass. `scale` (optional)
// replaces |expected| as the base of rtol, element by element.
std::optional<Mismatch> find_mismatch(const std::vector<double>& got,
                                      const std::vector<double>& expected,
                                      const Tolerance& tolerance,
                                      const std::vector<double>* scale = nullptr);

// "worst loss[3] got 1.25 expected 1.5 (|diff| 0.25 > allowed 1.5e-05; 2 of 7 elements)".
// With columns > 0 the index is shown as [row,column].
std::string describe_mismatch(const std::string& tensor, const Mismatch& mismatch,
                              int64_t columns = 0);

// The value stored in a tensor of `dtype` (round to nearest even); identity for float64.
double round_to_dtype(double value, DLDataType dtype);
// The spacing of `dtype` at |value| (the subnormal spacing below the normal range).
double ulp_of(double value, DLDataType dtype);

}  // namespace switchyard::conformance

#endif  // SWITCHYARD_CONFORMANCE_COMPARE_HPP
