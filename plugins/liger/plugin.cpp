// The liger plugin's descriptor, entry point and the four entry points of each family. Every
// entry validates its arguments completely (no CUDA call) before it touches the device, so a
// refusal needs no GPU; everything runs under sy::guarded.
#include "ce_op.hpp"
#include "ce_validate.hpp"
#include "ce_workspace.hpp"
#include "cuda_support.hpp"
#include "norm_op.hpp"
#include "norm_validate.hpp"
#include "options.hpp"
#include "plugin_state.hpp"

#include <switchyard/plugin.h>
#include <switchyard/plugin_helpers.hpp>

#include <cstdio>
#include <string>

namespace switchyard::liger {
namespace {

// ---- cross entropy ------------------------------------------------------------------------

sy_status ce_supports(const sy_ce_problem* problem, sy_error* err) {
  return sy::guarded(err, [&] { validate_ce_problem(problem); });
}

sy_status ce_workspace_size(const sy_ce_problem* problem, int64_t* bytes, sy_error* err) {
  return sy::guarded(err, [&] {
    if (bytes == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "bytes (the output pointer) is NULL");
    validate_ce_problem(problem);
    *bytes = ce_workspace_layout(*problem).total;
  });
}

sy_status ce_forward(const sy_ce_forward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_ce_problem(&ce_problem_of(args));
    validate_ce_forward(args);
    ce_forward(*args, options());
  });
}

sy_status ce_backward(const sy_ce_backward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_ce_problem(&ce_problem_of(args));
    validate_ce_backward(args);
    ce_backward(*args, options());
  });
}

int32_t ce_forward_collectives(const sy_ce_problem* problem) {
  if (problem == nullptr || problem->struct_size < sizeof(sy_ce_problem)) return -1;
  return ce_collectives(*problem);
}

// ---- normalization ------------------------------------------------------------------------

sy_status norm_supports(const sy_norm_problem* problem, sy_error* err) {
  return sy::guarded(err, [&] { validate_norm_problem(problem); });
}

sy_status norm_workspace_size(const sy_norm_problem* problem, int64_t* bytes, sy_error* err) {
  return sy::guarded(err, [&] {
    if (bytes == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "bytes (the output pointer) is NULL");
    validate_norm_problem(problem);
    *bytes = norm_workspace_layout(*problem).total;
  });
}

sy_status norm_forward(const sy_norm_forward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_norm_problem(&norm_problem_of(args));
    validate_norm_forward(args);
    norm_forward(*args, options());
  });
}

sy_status norm_backward(const sy_norm_backward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_norm_problem(&norm_problem_of(args));
    validate_norm_backward(args);
    norm_backward(*args, options());
  });
}

// ---- descriptor ---------------------------------------------------------------------------

sy_status probe(sy_error* err) {
  return sy::guarded(err, [] { require_usable_device(); });
}

constexpr uint32_t kDtypes = SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16;
constexpr uint32_t kDevices = SY_DEVICE_BIT(kDLCUDA);

// No SY_FEATURE_GRAPH_CAPTURE: SY_CE_CHECK_LABELS reads the labels' verdict on the host (a
// stream synchronisation). Without that flag a call neither synchronises nor allocates.
const sy_cross_entropy kCrossEntropy = {
    sizeof(sy_cross_entropy),
    kDtypes,
    kDevices,
    SY_CE_FEATURE_LABEL_SMOOTHING | SY_CE_FEATURE_IGNORE_INDEX | SY_CE_FEATURE_ARGMAX |
        SY_CE_FEATURE_GRAD_IN_FORWARD | SY_CE_FEATURE_TENSOR_PARALLEL,
    SY_DETERMINISTIC,
    ce_supports,
    ce_workspace_size,
    ce_forward,
    ce_backward,
    ce_forward_collectives,
};

const sy_norm kNorm = {
    sizeof(sy_norm),
    kDtypes,
    kDevices,
    SY_NORM_FEATURE_LAYER | SY_NORM_FEATURE_RMS | SY_NORM_FEATURE_L2 |
        SY_NORM_FEATURE_ZERO_CENTERED_GAMMA | SY_NORM_FEATURE_RESIDUAL |
        SY_NORM_FEATURE_MEMORY_EFFICIENT | SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT |
        SY_FEATURE_GRAPH_CAPTURE,
    SY_DETERMINISTIC,
    norm_supports,
    norm_workspace_size,
    norm_forward,
    norm_backward,
};

#define SY_LIGER_STRINGIFY2(x) #x
#define SY_LIGER_STRINGIFY(x) SY_LIGER_STRINGIFY2(x)

constexpr const char* kBuildInfo =
    "nvcc " SWITCHYARD_LIGER_NVCC_VERSION " for " SWITCHYARD_LIGER_CUDA_ARCHS
    ", CUDA runtime " SY_LIGER_STRINGIFY(CUDART_VERSION) " linked statically, "
    SWITCHYARD_LIGER_BUILD_TYPE " build; Liger-Kernel's row kernels in CUDA C++ (one block per "
    "row, online softmax, gradient in forward); options liger.casting_mode (gemma|llama), "
    "liger.lse_square_scale (z-loss)";

const sy_plugin kPlugin = {
    sizeof(sy_plugin),
    SY_ABI_MAJOR,
    SY_ABI_MINOR,
    kPluginName,
    kPluginVersion,
    "Switchyard",
    "Liger-Kernel's algorithms on CUDA: cross entropy with one block per row, online max/sum "
    "and the gradient written by the forward's second pass; LayerNorm/RMSNorm/L2Norm row "
    "kernels with deterministic dgamma/dbeta",
    probe,
    &kCrossEntropy,
    &kNorm,
    kBuildInfo,
};

std::string scale_text(float scale) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(scale));
  return text;
}

std::string describe(const Options& o) {
  return std::string("casting_mode = ") + casting_mode_name(o.casting_mode) +
         ", lse_square_scale = " + scale_text(o.lse_square_scale);
}

}  // namespace
}  // namespace switchyard::liger

extern "C" SY_PLUGIN_EXPORT const sy_plugin* sy_plugin_v1(const sy_host* host) {
  using namespace switchyard::liger;
  try {
    set_host(host);
    Options resolved;
    std::string problem;
    if (!parse_casting_mode(sy::option(host, kPluginName, "casting_mode"),
                            &resolved.casting_mode, &problem) ||
        !parse_lse_square_scale(sy::option(host, kPluginName, "lse_square_scale"),
                                &resolved.lse_square_scale, &problem)) {
      log(SY_LOG_ERROR, problem);
      return nullptr;
    }
    set_options(resolved);
    log(SY_LOG_DEBUG, "liger " + std::string(kPluginVersion) + ": " + describe(resolved));
    if (resolved.lse_square_scale != 0.0f)
      log(SY_LOG_WARN,
          "liger.lse_square_scale = " + scale_text(resolved.lse_square_scale) +
              " adds Liger's z-loss (loss += scale * lse^2, gradient += 2 scale lse p): results "
              "differ from docs/semantics.md and `switchyard check` will report mismatches");
    if (resolved.casting_mode == CastingMode::Llama)
      log(SY_LOG_INFO,
          "liger.casting_mode = llama: RMSNorm rounds x-hat to x's dtype before the gamma "
          "product (Liger's default); y is rounded twice and a y wider than x does not match "
          "the single-rounding reference");
    return &kPlugin;
  } catch (...) {
    return nullptr;
  }
}
