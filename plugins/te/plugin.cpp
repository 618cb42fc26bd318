// The te plugin's descriptor, entry point and the ABI boundary: every entry runs under
// sy::guarded, so no exception leaves the plugin. Argument checks are in *_validate, launch
// plans in *_plan, the host side of each family in *_ops, the kernels in *_kernels.cu.
#include "ce_ops.hpp"
#include "ce_plan.hpp"
#include "ce_validate.hpp"
#include "cuda_support.hpp"
#include "norm_ops.hpp"
#include "norm_validate.hpp"

#include <switchyard/plugin.h>
#include <switchyard/plugin_helpers.hpp>

#include <string>

namespace switchyard::te {
namespace {

constexpr const char* kPluginName = "te";

// ---- cross entropy ------------------------------------------------------------------------

sy_status ce_supports(const sy_ce_problem* problem, sy_error* err) {
  return sy::guarded(err, [&] { validate_ce_problem(problem); });
}

sy_status ce_workspace_size(const sy_ce_problem* problem, int64_t* bytes, sy_error* err) {
  return sy::guarded(err, [&] {
    if (bytes == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "bytes (the output pointer) is NULL");
    validate_ce_problem(problem);
    *bytes = ce_workspace_bytes(*problem);
  });
}

sy_status ce_forward_entry(const sy_ce_forward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_ce_problem(&ce_problem_of(args));
    ce_forward(*args);
  });
}

sy_status ce_backward_entry(const sy_ce_backward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_ce_problem(&ce_problem_of(args));
    ce_backward(*args);
  });
}

int32_t ce_collectives(const sy_ce_problem* problem) {
  if (problem == nullptr || problem->struct_size < sizeof(sy_ce_problem)) return -1;
  return ce_forward_collectives(*problem);
}

// ---- normalization ------------------------------------------------------------------------

sy_status norm_supports(const sy_norm_problem* problem, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_norm_problem(problem);
    check_sm_margin_if_possible(*problem);
  });
}

sy_status norm_workspace_size(const sy_norm_problem* problem, int64_t* bytes, sy_error* err) {
  return sy::guarded(err, [&] {
    if (bytes == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "bytes (the output pointer) is NULL");
    validate_norm_problem(problem);
    *bytes = norm_workspace_bytes(*problem);
  });
}

sy_status norm_forward_entry(const sy_norm_forward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_norm_problem(&norm_problem_of(args));
    norm_forward(*args);
  });
}

sy_status norm_backward_entry(const sy_norm_backward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_norm_problem(&norm_problem_of(args));
    norm_backward(*args);
  });
}

// ---- descriptor ---------------------------------------------------------------------------

sy_status probe(sy_error* err) {
  return sy::guarded(err, [&]() -> sy_status {
    std::string reason;
    const sy_status status = probe_cuda(&reason);
    if (status != SY_OK) return sy::set_error(err, status, "%s", reason.c_str());
    return SY_OK;
  });
}

constexpr uint32_t kDtypes = SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16;
constexpr uint32_t kDevices = SY_DEVICE_BIT(kDLCUDA);

const sy_cross_entropy kCrossEntropy = {
    sizeof(sy_cross_entropy),
    kDtypes,
    kDevices,
    SY_CE_FEATURE_LABEL_SMOOTHING | SY_CE_FEATURE_IGNORE_INDEX | SY_CE_FEATURE_ARGMAX |
        SY_CE_FEATURE_GRAD_IN_FORWARD | SY_CE_FEATURE_TENSOR_PARALLEL | SY_FEATURE_GRAPH_CAPTURE,
    SY_DETERMINISTIC,
    ce_supports,
    ce_workspace_size,
    ce_forward_entry,
    ce_backward_entry,
    ce_collectives,
};

const sy_norm kNorm = {
    sizeof(sy_norm),
    kDtypes,
    kDevices,
    SY_NORM_FEATURE_LAYER | SY_NORM_FEATURE_RMS | SY_NORM_FEATURE_L2 |
        SY_NORM_FEATURE_ZERO_CENTERED_GAMMA | SY_NORM_FEATURE_RESIDUAL |
        SY_NORM_FEATURE_MEMORY_EFFICIENT | SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT |
        SY_NORM_FEATURE_SM_MARGIN | SY_FEATURE_GRAPH_CAPTURE,
    SY_DETERMINISTIC,
    norm_supports,
    norm_workspace_size,
    norm_forward_entry,
    norm_backward_entry,
};

#if defined(__clang__)
#define SY_TE_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define SY_TE_COMPILER "gcc " __VERSION__
#else
#define SY_TE_COMPILER "unknown compiler"
#endif

constexpr const char* kBuildInfo =
    SY_TE_COMPILER ", CUDA " SWITCHYARD_TE_CUDA_TOOLKIT " (runtime linked statically), "
    "architectures " SWITCHYARD_TE_CUDA_ARCHITECTURES ", " SWITCHYARD_TE_BUILD_TYPE " build";

const sy_plugin kPlugin = {
    sizeof(sy_plugin),
    SY_ABI_MAJOR,
    SY_ABI_MINOR,
    kPluginName,
    SWITCHYARD_TE_VERSION,
    "Switchyard",
    "Transformer Engine's design on CUDA (sm_90+): one-pass online-softmax cross entropy with "
    "one all-gather of per-row statistics for tensor parallelism and gradient in forward; "
    "LayerNorm/RMSNorm/L2Norm rows in registers with two-stage deterministic dgamma and "
    "sm_margin; deterministic, no host synchronisation, graph-capturable",
    probe,
    &kCrossEntropy,
    &kNorm,
    kBuildInfo,
};

}  // namespace
}  // namespace switchyard::te

extern "C" SY_PLUGIN_EXPORT const sy_plugin* sy_plugin_v1(const sy_host* host) {
  using namespace switchyard::te;
  try {
    sy::log(host, SY_LOG_DEBUG, kPluginName,
            std::string("te ") + SWITCHYARD_TE_VERSION + ": CUDA kernels for compute capability "
            "9.0+; probe() says whether a GPU is usable here");
    return &kPlugin;
  } catch (...) {
    return nullptr;
  }
}
