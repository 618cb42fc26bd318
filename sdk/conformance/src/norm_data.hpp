// The data of one normalization case, generated from the case's seed.
#ifndef SWITCHYARD_CONFORMANCE_NORM_DATA_HPP
#define SWITCHYARD_CONFORMANCE_NORM_DATA_HPP

#include <cstdint>
#include <switchyard/conformance/reference_norm.hpp>
#include <vector>

#include "norm_case.hpp"

namespace switchyard::conformance {

inline bool layer(const NormSpec& s) { return s.kind == SY_NORM_LAYER; }
inline bool with_gamma(const NormSpec& s) { return s.kind != SY_NORM_L2; }
inline bool with_beta(const NormSpec& s) { return layer(s) && s.bias; }

// Inputs, each value exactly representable in the dtype of its tensor.
struct NormData {
  int64_t rows = 0;
  int64_t hidden = 0;
  std::vector<double> x, residual, gamma, beta, dy, d_residual_out, dgamma_initial, dbeta_initial;
};

// Nothing zero; every third row of x has a large mean; gamma around 1 (around 0 when
// zero-centred); accumulation buffers pre-filled.
NormData make_norm_data(const NormSpec& spec);

// Rows [begin, end) (gamma, beta and the accumulation buffers are per column: kept).
NormData norm_data_rows(const NormData& data, int64_t begin, int64_t end);

NormReferenceProblem norm_reference_problem(const NormSpec& spec, int64_t rows);

}  // namespace switchyard::conformance

#endif
