// Building normalization problems, data and argument structs for the native suites.
#ifndef SWITCHYARD_TESTS_NATIVE_NORM_HARNESS_HPP
#define SWITCHYARD_TESTS_NATIVE_NORM_HARNESS_HPP

#include "native_support.hpp"
#include "reference.hpp"

#include <switchyard/norm.h>

namespace native_test {

sy_norm_problem make_norm_problem(sy_norm_kind kind, int64_t rows, int64_t hidden,
                                  DLDataType x_dtype = sy::kF32, uint32_t flags = 0);

// Random data, every value representable in the dtypes of `p`.
struct NormData {
  int64_t rows = 0, hidden = 0;
  std::vector<double> x, residual, weight, bias, dy, d_residual_out;
};
NormData random_norm_data(const sy_norm_problem& p, uint64_t seed);

// Tensors and workspace of one call, filled from data; outputs poisoned. Optional tensors
// (bias, dweight, dbias, d_residual_out) are passed when the kind and flags allow them and
// `with_optional` is set.
struct NormSetup {
  sy_norm_problem problem{};
  bool with_optional = true;
  Tensor x, residual, weight, bias, y, residual_out, mean, rstd;
  Tensor dy, d_residual_out, dx, dweight, dbias;
  std::vector<uint64_t> workspace;
  int64_t workspace_bytes = 0;

  NormSetup(const sy_norm_problem& p, const NormData& data, bool with_optional = true);
  bool has_bias() const { return with_optional && problem.kind == SY_NORM_LAYER; }
  bool has_weight() const { return problem.kind != SY_NORM_L2; }
  bool has_residual() const { return (problem.flags & SY_NORM_RESIDUAL) != 0; }
  sy_norm_forward_args forward_args();
  // x_or_y: y with MEMORY_EFFICIENT, else h (residual_out with RESIDUAL, else x).
  sy_norm_backward_args backward_args();
};

// The reference for a setup: h rounded to x's dtype, gamma_eff as the plugin must form it.
NormReferenceInput reference_input(const NormSetup& s, const NormData& data);

}  // namespace native_test

#endif
