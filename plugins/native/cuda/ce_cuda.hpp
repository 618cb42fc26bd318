// Cross entropy on CUDA: Megatron's eager vocab-parallel algorithm as separate kernels in the
// order of its PyTorch ops (ce_cuda.cpp). Arguments must have passed ce_validate and
// require_cuda_device first; these functions check the current device and where the tensors'
// memory lives, then enqueue everything on args.stream without synchronising (except with
// SY_CE_CHECK_LABELS, see README).
#ifndef SWITCHYARD_NATIVE_CUDA_CE_CUDA_HPP
#define SWITCHYARD_NATIVE_CUDA_CE_CUDA_HPP

#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::native::cuda {

// The fp32 copy of the logits (N x Vp), per-row statistics and the label flag, 256-aligned,
// plus 256 bytes of slack for an unaligned workspace pointer.
int64_t ce_cuda_workspace_bytes(const sy_ce_problem& problem);

void ce_cuda_forward(const sy_ce_forward_args& args);
void ce_cuda_backward(const sy_ce_backward_args& args);

}  // namespace switchyard::native::cuda

#endif
