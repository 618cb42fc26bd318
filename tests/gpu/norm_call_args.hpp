// The ABI argument structs of a norm call made by the GPU checks, from their device tensors:
// x, gamma, (beta), y, (mean), rstd and the workspace, forward and backward from x. The
// optional ones (residual, residual_out, d_residual_out, a backward from y) stay null or as
// given; a check sets those it uses.
#ifndef SWITCHYARD_TESTS_GPU_NORM_CALL_ARGS_HPP
#define SWITCHYARD_TESTS_GPU_NORM_CALL_ARGS_HPP

#include "gpu_tensor.hpp"

#include <switchyard/norm.h>

#include <cstdint>

namespace gpu_test {

// Where a call takes its tensors. beta and mean may be null (RMS/L2; a LayerNorm without
// bias); everything named must outlive the call made with the structs built from it.
struct NormCallTensors {
  const GpuTensor* x = nullptr;
  const GpuTensor* gamma = nullptr;
  const GpuTensor* beta = nullptr;
  GpuTensor* y = nullptr;
  GpuTensor* mean = nullptr;
  GpuTensor* rstd = nullptr;
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
};

inline const DLTensor* dl_or_null(const GpuTensor* t) { return t != nullptr ? t->dl() : nullptr; }
inline DLTensor* dl_or_null(GpuTensor* t) { return t != nullptr ? t->dl() : nullptr; }

// `p` must outlive the call made with the result.
inline sy_norm_forward_args norm_forward_args(const sy_norm_problem& p, const NormCallTensors& t,
                                              void* stream) {
  sy_norm_forward_args f{};
  f.struct_size = sizeof f;
  f.problem = &p;
  f.x = t.x->dl();
  f.weight = dl_or_null(t.gamma);
  f.bias = dl_or_null(t.beta);
  f.y = t.y->dl();
  f.mean = dl_or_null(t.mean);
  f.rstd = t.rstd->dl();
  f.workspace = t.workspace;
  f.workspace_bytes = t.workspace_bytes;
  f.stream = stream;
  return f;
}

// The backward from x (x_or_y = x) of the forward norm_forward_args(p, t, stream) made, writing
// dx, dweight and dbias (each may be null: not wanted).
inline sy_norm_backward_args norm_backward_args(const sy_norm_problem& p, const NormCallTensors& t,
                                                const GpuTensor& dy, GpuTensor& dx,
                                                GpuTensor* dweight, GpuTensor* dbias,
                                                void* stream) {
  sy_norm_backward_args b{};
  b.struct_size = sizeof b;
  b.problem = &p;
  b.dy = dy.dl();
  b.x_or_y = t.x->dl();
  b.weight = dl_or_null(t.gamma);
  b.bias = dl_or_null(t.beta);
  b.mean = dl_or_null(t.mean);
  b.rstd = t.rstd->dl();
  b.dx = dx.dl();
  b.dweight = dl_or_null(dweight);
  b.dbias = dl_or_null(dbias);
  b.workspace = t.workspace;
  b.workspace_bytes = t.workspace_bytes;
  b.stream = stream;
  return b;
}

}  // namespace gpu_test

#endif
