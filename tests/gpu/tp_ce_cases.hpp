// The tensor-parallel cross-entropy cases of tp_nccl_check: what each rank runs, and how one
// case is checked on one rank against the float64 reference of the conformance suite.
#ifndef SWITCHYARD_TESTS_GPU_TP_CE_CASES_HPP
#define SWITCHYARD_TESTS_GPU_TP_CE_CASES_HPP

#include "counting_comm.hpp"

#include <switchyard/loss.h>
#include <switchyard/switchyard.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gpu_test {

struct TpCase {
  std::string name;  // "bf16/argmax-ties"
  DLDataType logits_dtype{kDLFloat, 32, 1};
  DLDataType grad_dtype{kDLFloat, 32, 1};
  DLDataType label_dtype{kDLInt, 64, 1};
  int64_t rows = 9;
  int64_t vocab = 50;
  std::vector<int64_t> split{37, 13};  // columns per rank: unequal on purpose
  float label_smoothing = 0;
  sy_smoothing smoothing = SY_SMOOTHING_MEGATRON;
  int64_t ignore_index = -100;
  uint32_t flags = 0;
  bool strided = false;            // padded rows in logits and gradients
  bool grad_over_logits = false;   // SY_CE_GRAD_IN_FORWARD writing over the logits
  bool backward_in_place = false;  // backward writing over the logits
  bool ties = false;               // every row's maximum twice, across the ranks
  bool bad_label = false;          // SY_CE_CHECK_LABELS must refuse one label
};

// The same list, in the same order, on every rank (the collectives must pair up).
std::vector<TpCase> tp_cases();

// What one rank needs to run a case.
struct RankContext {
  const switchyard::Runtime* runtime = nullptr;
  CountingComm* comm = nullptr;
  int32_t rank = 0;
  cudaStream_t stream = nullptr;  // a non-default stream: the plugin must use the one it gets
  // What the plugin declares for cross entropy (FamilyInfo): a case needing a feature or dtype
  // it does not declare is skipped, on every rank alike (no collective is issued).
  uint32_t features = 0;  // SY_CE_FEATURE_*
  uint32_t dtypes = 0;    // SY_DTYPE_*
};

struct CaseResult {
  bool passed = false;
  bool skipped = false;  // the plugin does not declare what the case needs
  std::string detail;    // the problem when passed, what went wrong otherwise, why skipped
};

// Why the plugin cannot be asked for this case ("" when it can): a feature or dtype it does
// not declare. The same answer on every rank.
std::string missing_capability(const TpCase& c, uint32_t features, uint32_t dtypes);

// Never throws: every problem is a failed case.
CaseResult run_tp_case(const TpCase& c, const RankContext& context);

}  // namespace gpu_test

#endif
