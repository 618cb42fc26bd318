// What apex accepts, decided from the problem alone (no device, no tensors): the answers of
// supports() and workspace_size(). Throws sy::Failure — INVALID_ARGUMENT for the caller's
// mistakes, UNSUPPORTED for valid requests apex does not implement — with a sentence that
// names the field, what was given and what would work.
#ifndef SWITCHYARD_APEX_PROBLEM_CHECK_HPP
#define SWITCHYARD_APEX_PROBLEM_CHECK_HPP

#include "kernel_types.hpp"

#include <switchyard/norm.h>

#include <cstdint>
#include <string>

namespace switchyard::apex {

// Above this apex refuses (its kernels index columns with 32-bit chunk counts in places).
constexpr int64_t kMaxHidden = int64_t{1} << 30;

// The validated problem in the kernels' terms.
struct Problem {
  NormKind kind = NormKind::Layer;
  int64_t rows = 0;
  int64_t hidden = 0;
  float eps = 0;
  Dtype x_dtype = Dtype::F32;
  Dtype y_dtype = Dtype::F32;
  Dtype weight_dtype = Dtype::F32;       // meaningless for L2Norm
  Dtype grad_weight_dtype = Dtype::F32;  // meaningless for L2Norm
  bool zero_centered_gamma = false;
  bool memory_efficient = false;
  bool accumulate = false;
  DLDevice device{kDLCUDA, 0};
  int32_t sm_margin = 0;
};

Problem check_problem(const sy_norm_problem* problem);

const char* kind_name(NormKind kind);  // "LayerNorm", "RMSNorm", "L2Norm"
DLDataType dl_dtype(Dtype dtype);
int64_t dtype_bytes(Dtype dtype);

}  // namespace switchyard::apex

#endif
