// The ABI argument structs of a cross-entropy call made by the GPU checks, from their device
// tensors: the fields every call sets. The optional ones (argmax, the gradient in the forward,
// the communicator) stay null; a check sets those it uses.
#ifndef SWITCHYARD_TESTS_GPU_CE_CALL_ARGS_HPP
#define SWITCHYARD_TESTS_GPU_CE_CALL_ARGS_HPP

#include "gpu_tensor.hpp"

#include <switchyard/loss.h>

#include <cstdint>

namespace gpu_test {

// `p`, the tensors and the workspace must outlive the call made with the result.
inline sy_ce_forward_args ce_forward_args(const sy_ce_problem& p, const GpuTensor& logits,
                                          const GpuTensor& labels, GpuTensor& loss,
                                          GpuTensor& lse, void* workspace,
                                          int64_t workspace_bytes, void* stream) {
  sy_ce_forward_args f{};
  f.struct_size = sizeof f;
  f.problem = &p;
  f.logits = logits.dl();
  f.labels = labels.dl();
  f.loss = loss.dl();
  f.lse = lse.dl();
  f.workspace = workspace;
  f.workspace_bytes = workspace_bytes;
  f.stream = stream;
  return f;
}

inline sy_ce_backward_args ce_backward_args(const sy_ce_problem& p, const GpuTensor& logits,
                                            const GpuTensor& labels, const GpuTensor& lse,
                                            const GpuTensor& grad_loss, GpuTensor& grad_logits,
                                            void* workspace, int64_t workspace_bytes,
                                            void* stream) {
  sy_ce_backward_args b{};
  b.struct_size = sizeof b;
  b.problem = &p;
  b.logits = logits.dl();
  b.labels = labels.dl();
  b.lse = lse.dl();
  b.grad_loss = grad_loss.dl();
  b.grad_logits = grad_logits.dl();
  b.workspace = workspace;
  b.workspace_bytes = workspace_bytes;
  b.stream = stream;
  return b;
}

}  // namespace gpu_test

#endif
