// Normalization on the device: the specialisation a problem needs, the workspace layout and
// the kernel sequence. Forward: sy_norm_forward (one block per row). Backward:
// sy_norm_backward (one block per fixed chunk of rows: dx, and per-chunk partial dgamma/dbeta
// into the workspace), then sy_norm_dweight (the partials summed in chunk order).
#ifndef SWITCHYARD_FUSED_NORM_RUN_HPP
#define SWITCHYARD_FUSED_NORM_RUN_HPP

#include "device_api.hpp"
#include "jit/norm_source.hpp"

#include <switchyard/norm.h>

#include <array>
#include <cstdint>

namespace switchyard::fused {

jit::NormSpecialization norm_specialization(const sy_norm_problem& problem);

struct NormWorkspace {
  int64_t dweight = -1, dbias = -1;  // byte offsets, -1 when not needed
  int64_t chunks = 0;
  int64_t bytes = 0;
  static NormWorkspace of(const sy_norm_problem& problem);
};

int64_t norm_workspace_bytes(const sy_norm_problem& problem);

using NormKernels = std::array<const void*, jit::kNormKernelCount>;

void norm_forward(const sy_norm_forward_args& args, const NormKernels& kernels, Device& device);
void norm_backward(const sy_norm_backward_args& args, const NormKernels& kernels, Device& device);

}  // namespace switchyard::fused

#endif  // SWITCHYARD_FUSED_NORM_RUN_HPP
