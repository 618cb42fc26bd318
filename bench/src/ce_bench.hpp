// Cross entropy: host inputs and float64 reference for one shape, and the run of one backend
// on one case (timing, memory, collectives, correctness).
#ifndef SWITCHYARD_BENCH_CE_BENCH_HPP
#define SWITCHYARD_BENCH_CE_BENCH_HPP

#include "cases.hpp"
#include "result.hpp"
#include "run_settings.hpp"

#include <switchyard/conformance/reference_ce.hpp>

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::bench {

// Inputs for one CE shape split over `ranks` ranks (global vocabulary = cols * ranks), and the
// reference on a sample of rows. Shared by the per-token and grad-in-forward cases of a shape.
struct CeCaseData {
  int64_t rows = 0;
  int64_t vocab_local = 0;
  int64_t vocab = 0;
  int32_t ranks = 1;
  DLDataType dtype{kDLBfloat, 16, 1};
  std::vector<std::vector<uint8_t>> rank_logits;  // [rank] -> [rows, vocab_local] encoded
  std::vector<int64_t> labels;                    // [rows], global ids
  std::vector<float> grad;                        // [rows]: grad_loss, and grad_scale
  std::vector<int64_t> sample_rows;               // rows the check reads back
  conformance::CeReferenceForward reference;      // over sample_rows, global vocabulary

  bool same_shape(const CaseSpec& spec, int32_t ranks_, DLDataType dtype_) const;
};

CeCaseData make_ce_data(const CaseSpec& spec, DLDataType dtype, int32_t ranks,
                        const RunSettings& settings);

Result run_ce_backend(const CaseSpec& spec, const CeCaseData& data, const std::string& backend,
                      const RunContext& context);

}  // namespace switchyard::bench

#endif
