// Cross entropy on the device: which specialisation a problem needs, the workspace layout,
// and the sequence of kernels and collectives (Megatron's fused path: MAX all-reduce, then
// target logit, sum of exp and sum of z share ONE SUM all-reduce — two collectives, a third
// (int64 MIN) with SY_CE_ARGMAX). Arguments are validated before these run.
#ifndef SWITCHYARD_FUSED_CE_RUN_HPP
#define SWITCHYARD_FUSED_CE_RUN_HPP

#include "device_api.hpp"
#include "jit/ce_source.hpp"

#include <switchyard/loss.h>

#include <array>
#include <cstdint>

namespace switchyard::fused {

jit::CeSpecialization ce_specialization(const sy_ce_problem& problem);

// Byte offsets into the workspace (-1: not needed for this problem).
struct CeWorkspace {
  int64_t gmax = -1, red = -1, keys = -1, cand = -1, count = -1, pkeys = -1, psum = -1, bad = -1;
  int64_t bytes = 0;
  static CeWorkspace of(const sy_ce_problem& problem);
};

int64_t ce_workspace_bytes(const sy_ce_problem& problem);
int32_t ce_forward_collectives(const sy_ce_problem& problem);

using CeKernels = std::array<const void*, jit::kCeKernelCount>;

void ce_forward(const sy_ce_forward_args& args, const CeKernels& kernels, Device& device);
void ce_backward(const sy_ce_backward_args& args, const CeKernels& kernels, Device& device);

}  // namespace switchyard::fused

#endif  // SWITCHYARD_FUSED_CE_RUN_HPP
