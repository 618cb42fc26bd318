// One normalization case: what it runs (NormSpec) and how (run_norm_case).
#ifndef SWITCHYARD_CONFORMANCE_NORM_CASE_HPP
#define SWITCHYARD_CONFORMANCE_NORM_CASE_HPP

#include <switchyard/norm.h>

#include <cstdint>
#include <string>
#include <switchyard/switchyard.hpp>

#include "dtype_codec.hpp"

namespace switchyard::conformance {

enum class NormCheck {
  Numeric,          // forward and backward against the reference
  Replay,           // two identical runs are bit-identical (dgamma/dbeta included)
  BatchInvariance,  // y, mean, rstd, dx of a row do not depend on the batch (dgamma excluded)
};

struct NormSpec {
  DLDevice device{kDLCPU, 0};
  sy_norm_kind kind = SY_NORM_RMS;
  int64_t rows = 5;
  int64_t hidden = 127;
  float eps = 1e-5f;
  DLDataType x_dtype = kF32;
  DLDataType y_dtype = kF32;
  DLDataType weight_dtype = kF32;
  DLDataType grad_weight_dtype = kF32;
  uint32_t flags = 0;
  bool bias = true;      // LayerNorm only: pass beta
  bool strided = false;  // rows of every [N, H] tensor have padding
  int32_t sm_margin = 0;
  NormCheck check = NormCheck::Numeric;
  uint64_t seed = 1;
  std::string declared;  // as CeSpec::declared
};

std::string run_norm_case(const Runtime& runtime, const NormSpec& spec);
std::string describe_norm(const NormSpec& spec);

}  // namespace switchyard::conformance

#endif
