// LayerNorm / RMSNorm / L2Norm on CUDA. Arguments must have passed norm_validate and
// require_cuda_device first; these check the current device and where the tensors' memory
// lives, then enqueue the kernels on args.stream without synchronising.
#ifndef SWITCHYARD_NATIVE_CUDA_NORM_CUDA_HPP
#define SWITCHYARD_NATIVE_CUDA_NORM_CUDA_HPP

#include <switchyard/norm.h>

#include <cstdint>

namespace switchyard::native::cuda {

// The dgamma/dbeta partials, [ceil(N / 64), H] doubles each (none for L2Norm), 256-aligned,
// plus 256 bytes of slack for an unaligned workspace pointer.
int64_t norm_cuda_workspace_bytes(const sy_norm_problem& problem);

void norm_cuda_forward(const sy_norm_forward_args& args);
void norm_cuda_backward(const sy_norm_backward_args& args);

}  // namespace switchyard::native::cuda

#endif
