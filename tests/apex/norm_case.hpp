// One normalization problem run through the emulated kernels (emulator.hpp) and checked
// against the conformance suite's float64 reference with its tolerances (docs/semantics.md),
// the way `switchyard check` checks a plugin on the GPU.
#ifndef SWITCHYARD_TESTS_APEX_NORM_CASE_HPP
#define SWITCHYARD_TESTS_APEX_NORM_CASE_HPP

#include "host_tensor.hpp"

#include <switchyard/norm.h>
#include <switchyard/plugin_helpers.hpp>

#include <cstdint>
#include <string>

namespace apex_test {

struct NormCase {
  sy_norm_kind kind = SY_NORM_LAYER;
  int64_t rows = 5;
  int64_t hidden = 127;
  DLDataType x = sy::kF32;
  DLDataType y = sy::kF32;
  DLDataType weight = sy::kF32;
  DLDataType grad_weight = sy::kF32;
  uint32_t flags = 0;
  bool bias = true;          // LayerNorm: pass β
  bool dweight = true;       // ask for dγ (not L2)
  bool dbias = true;         // ask for dβ (LayerNorm)
  int64_t pad = 0;           // extra elements at the end of every row of every [N, H] tensor
  int64_t misalign = 0;      // bytes every [N, H] tensor starts past a 16-byte boundary
  double x_offset = 0;       // added to x (LayerNorm statistics far from zero)
  uint64_t seed = 1;
  int64_t first_row = 0;     // run rows [first_row, first_row + rows) of the seed's data
  int64_t data_rows = 0;     // rows of data generated (0: rows)
  // Added to y's absolute tolerance: with x far from zero an fp32 mean is off by up to half an
  // ulp of x, and every x − mean carries that (the reference keeps the mean in float64).
  double y_extra_atol = 0;
};

std::string describe(const NormCase& c);

struct NormOutputs {
  HostTensor y, mean, rstd, dx, dweight, dbias;
  bool statistics_ok = true;  // mean, rstd within tolerance
  bool forward_ok = true;     // y and the statistics within tolerance
  bool backward_ok = true;    // every backward output within tolerance
  bool vector_access = false;
};

// Runs forward and backward (backward from the reference's statistics, as the conformance
// suite does) and CHECKs every output; returns them for bitwise comparisons.
NormOutputs run_norm_case(const NormCase& c);

}  // namespace apex_test

#endif
