// One cross-entropy case: what it runs (CeSpec) and how (run_ce_case).
#ifndef SWITCHYARD_CONFORMANCE_CE_CASE_HPP
#define SWITCHYARD_CONFORMANCE_CE_CASE_HPP

#include <switchyard/loss.h>

#include <cstdint>
#include <string>
#include <switchyard/switchyard.hpp>
#include <vector>

#include "dtype_codec.hpp"

namespace switchyard::conformance {

enum class CeCheck {
  Numeric,                // forward (+ backward) against the reference
  Replay,                 // two identical runs are bit-identical
  BatchInvariance,        // rows give the same bits alone and in any batch
  BadLabelRefused,        // SY_CE_CHECK_LABELS refuses an out-of-range label
  GatheredLogitsRefused,  // vocab_local == vocab_size with tp_size > 1 is refused
};

struct CeSpec {
  DLDevice device{kDLCPU, 0};
  int64_t rows = 7;
  int64_t vocab = 50;
  std::vector<int64_t> split{50};  // columns per rank, in rank order
  DLDataType logits_dtype = kF32;
  DLDataType label_dtype = kI64;
  DLDataType grad_dtype = kF32;
  float label_smoothing = 0;
  sy_smoothing smoothing = SY_SMOOTHING_MEGATRON;
  int64_t ignore_index = -100;
  uint32_t flags = 0;
  bool strided = false;                  // rows of logits and gradients have padding
  bool grad_in_forward_aliased = false;  // grad_logits is the logits tensor
  bool backward_in_place = false;        // backward writes over the logits
  bool argmax_ties = false;              // every row's max appears twice (across ranks)
  CeCheck check = CeCheck::Numeric;
  uint64_t seed = 1;  // already mixed with the case name
  // What the case relies on that the plugin declared ("float32 logits, argmax"); when set,
  // a refusal from supports() is a failure rather than a skip.
  std::string declared;
};

// Runs the case; returns the PASS detail or throws CaseSkip / CaseFailure.
std::string run_ce_case(const Runtime& runtime, const CeSpec& spec);

// "N=7 V=50 Vp=20+30 logits=f32 labels=i64 grad=f32 ..."
std::string describe_ce(const CeSpec& spec);

}  // namespace switchyard::conformance

#endif
