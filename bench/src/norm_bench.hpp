// Normalization: host inputs and float64 reference for one case, and the run of one backend
// (forward, then backward with dy; dweight and dbias included, as a training step needs them).
#ifndef SWITCHYARD_BENCH_NORM_BENCH_HPP
#define SWITCHYARD_BENCH_NORM_BENCH_HPP

#include "cases.hpp"
#include "result.hpp"
#include "run_settings.hpp"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::bench {

struct NormCaseData {
  sy_norm_kind kind = SY_NORM_RMS;
  int64_t rows = 0;
  int64_t hidden = 0;
  float eps = 1e-5f;
  DLDataType dtype{kDLBfloat, 16, 1};  // x, y, dx, dy, weight, bias, dweight, dbias
  std::vector<uint8_t> x, dy;          // [rows, hidden] encoded
  std::vector<uint8_t> gamma, beta;    // [hidden] encoded; beta for LayerNorm only
  std::vector<int64_t> sample_rows;
  // Reference over sample_rows ([samples, hidden] / [samples]) and over all rows (dweight,
  // dbias and the sums of |terms| their tolerance scales with).
  std::vector<double> y, dx, mean, rstd;
  std::vector<double> dgamma, dbeta, dgamma_scale, dbeta_scale;
};

NormCaseData make_norm_data(const CaseSpec& spec, DLDataType dtype, const RunSettings& settings);

Result run_norm_backend(const CaseSpec& spec, const NormCaseData& data, const std::string& backend,
                        const RunContext& context);

}  // namespace switchyard::bench

#endif
