// libswitchyard-apex.so: the descriptor, the entry point and the ABI wrappers. The work is in
// norm_ops.cpp (host) and kernels.cuh (device).
#include "cuda_env.hpp"
#include "norm_ops.hpp"

#include <switchyard/plugin.h>
#include <switchyard/plugin_helpers.hpp>

namespace {

using namespace switchyard;

constexpr const char* kName = "apex";

sy_status probe(sy_error* err) {
  return sy::guarded(err, [] {
    const std::string& reason = apex::unavailable_reason();
    if (!reason.empty()) sy::fail(SY_ERR_UNAVAILABLE, reason);
  });
}

sy_status norm_supports(const sy_norm_problem* problem, sy_error* err) {
  return sy::guarded(err, [&] { apex::supports(problem); });
}

sy_status norm_workspace_size(const sy_norm_problem* problem, int64_t* bytes, sy_error* err) {
  return sy::guarded(err, [&] {
    if (bytes == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "bytes (the result pointer) is NULL");
    *bytes = apex::workspace_size(problem);
  });
}

sy_status norm_forward(const sy_norm_forward_args* args, sy_error* err) {
  return sy::guarded(err, [&] { apex::forward(args); });
}

sy_status norm_backward(const sy_norm_backward_args* args, sy_error* err) {
  return sy::guarded(err, [&] { apex::backward(args); });
}

// What is implemented, and nothing more (plugins/apex/README.md says why each bit is or is
// not here): all three kinds, zero-centred γ, memory-efficient backward, fp32 dγ/dβ
// accumulation, sm_margin (the persistent grids shrink), graph capture (no sync, no
// allocation). Not SY_NORM_FEATURE_RESIDUAL: Apex has no fused residual add.
constexpr uint32_t kFeatures = SY_NORM_FEATURE_LAYER | SY_NORM_FEATURE_RMS | SY_NORM_FEATURE_L2 |
                               SY_NORM_FEATURE_ZERO_CENTERED_GAMMA |
                               SY_NORM_FEATURE_MEMORY_EFFICIENT |
                               SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT | SY_NORM_FEATURE_SM_MARGIN |
                               SY_FEATURE_GRAPH_CAPTURE;

const sy_norm kNorm = {
    sizeof(sy_norm),
    SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16,
    SY_DEVICE_BIT(kDLCUDA),
    kFeatures,
    SY_DETERMINISTIC,
    norm_supports,
    norm_workspace_size,
    norm_forward,
    norm_backward,
};

const sy_plugin kPlugin = {
    sizeof(sy_plugin),
    SY_ABI_MAJOR,
    SY_ABI_MINOR,
    kName,
    SWITCHYARD_APEX_VERSION,
    "Switchyard",
    "Apex-style fused LayerNorm/RMSNorm/L2Norm on CUDA: Welford/Chan statistics, register-"
    "resident persistent kernels for common hidden sizes, memory-efficient backward, "
    "deterministic two-stage dgamma/dbeta",
    probe,
    nullptr,
    &kNorm,
    "CUDA " SWITCHYARD_APEX_CUDA_TOOLKIT " runtime (linked statically), kernels for CUDA "
    "architectures " SWITCHYARD_APEX_CUDA_ARCHITECTURES ", " SWITCHYARD_APEX_BUILD_TYPE " build",
};

}  // namespace

extern "C" SY_PLUGIN_EXPORT const sy_plugin* sy_plugin_v1(const sy_host* host) {
  (void)host;  // apex has no options and logs nothing: its answers carry their reasons
  return &kPlugin;
}
