// The fused plugin's descriptor, entry point and the four entry points of each family:
// validate (no device needed), fetch the JIT kernels of the problem's specialisation, run.
#include "ce_run.hpp"
#include "ce_validate.hpp"
#include "cuda_device.hpp"
#include "jit/nvrtc_library.hpp"
#include "norm_run.hpp"
#include "norm_validate.hpp"
#include "plugin_state.hpp"

#include <switchyard/plugin.h>
#include <switchyard/plugin_helpers.hpp>

#include <string>

namespace switchyard::fused {
namespace {

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
    const sy_ce_problem& problem = ce_problem_of(args);
    validate_ce_problem(&problem);
    validate_ce_forward(args, ce_workspace_bytes(problem));
    const int device = problem.device.device_id;
    const CeKernels kernels = ce_kernels(ce_specialization(problem), device);
    cuda::DeviceScope scope(device);
    cuda::CudaDevice cuda_device;
    ce_forward(*args, kernels, cuda_device);
  });
}

sy_status ce_backward_entry(const sy_ce_backward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    const sy_ce_problem& problem = ce_problem_of(args);
    validate_ce_problem(&problem);
    validate_ce_backward(args);
    const int device = problem.device.device_id;
    const CeKernels kernels = ce_kernels(ce_specialization(problem), device);
    cuda::DeviceScope scope(device);
    cuda::CudaDevice cuda_device;
    ce_backward(*args, kernels, cuda_device);
  });
}

int32_t ce_collectives(const sy_ce_problem* problem) {
  if (problem == nullptr || problem->struct_size < sizeof(sy_ce_problem)) return -1;
  return ce_forward_collectives(*problem);
}

// ---- normalization ------------------------------------------------------------------------

sy_status norm_supports(const sy_norm_problem* problem, sy_error* err) {
  return sy::guarded(err, [&] { validate_norm_problem(problem); });
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
    const sy_norm_problem& problem = norm_problem_of(args);
    validate_norm_problem(&problem);
    validate_norm_forward(args, norm_workspace_bytes(problem));
    const int device = problem.device.device_id;
    const NormKernels kernels = norm_kernels(norm_specialization(problem), device);
    cuda::DeviceScope scope(device);
    cuda::CudaDevice cuda_device;
    norm_forward(*args, kernels, cuda_device);
  });
}

sy_status norm_backward_entry(const sy_norm_backward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    const sy_norm_problem& problem = norm_problem_of(args);
    validate_norm_problem(&problem);
    validate_norm_backward(args, norm_workspace_bytes(problem));
    const int device = problem.device.device_id;
    const NormKernels kernels = norm_kernels(norm_specialization(problem), device);
    cuda::DeviceScope scope(device);
    cuda::CudaDevice cuda_device;
    norm_backward(*args, kernels, cuda_device);
  });
}

// ---- descriptor ---------------------------------------------------------------------------

// Every reason the plugin cannot run here, not just the first: an operator fixing the driver
// should not discover the missing NVRTC only afterwards.
sy_status probe(sy_error* err) {
  return sy::guarded(err, [&] {
    std::string reasons = cuda::unavailable_reason();
    const char* nvrtc_option = option("nvrtc_library");
    std::string nvrtc_error;
    if (!jit::NvrtcLibrary::load(nvrtc_option != nullptr ? nvrtc_option : "", &nvrtc_error))
      reasons += (reasons.empty() ? "" : "; also, ") + nvrtc_error;
    if (!reasons.empty()) sy::fail(SY_ERR_UNAVAILABLE, "fused cannot run here: " + reasons);
  });
}

constexpr uint32_t kDtypes = SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16;
constexpr uint32_t kDevices = SY_DEVICE_BIT(kDLCUDA);

const sy_cross_entropy kCrossEntropy = {
    sizeof(sy_cross_entropy),
    kDtypes,
    kDevices,
    SY_CE_FEATURE_LABEL_SMOOTHING | SY_CE_FEATURE_IGNORE_INDEX | SY_CE_FEATURE_ARGMAX |
        SY_CE_FEATURE_GRAD_IN_FORWARD | SY_CE_FEATURE_TENSOR_PARALLEL,
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
        SY_NORM_FEATURE_MEMORY_EFFICIENT | SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT,
    SY_DETERMINISTIC,
    norm_supports,
    norm_workspace_size,
    norm_forward_entry,
    norm_backward_entry,
};

#if defined(__clang__)
#define SY_FUSED_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define SY_FUSED_COMPILER "gcc " __VERSION__
#else
#define SY_FUSED_COMPILER "unknown compiler"
#endif

constexpr const char* kBuildInfo =
    SY_FUSED_COMPILER ", C++17, " SWITCHYARD_FUSED_BUILD_TYPE " build; CUDA runtime "
    SWITCHYARD_FUSED_CUDA_VERSION " linked statically; NVRTC opened at run time "
    "(libnvrtc.so.13, or the option nvrtc_library); kernels generated per dtype, Vp/H and "
    "flags, compiled to a cubin for the GPU's architecture, cached on disk "
    "(options cache_dir, cache_disable, cache_max_bytes)";

const sy_plugin kPlugin = {
    sizeof(sy_plugin),
    SY_ABI_MAJOR,
    SY_ABI_MINOR,
    kPluginName,
    SWITCHYARD_FUSED_VERSION,
    "Switchyard",
    "JIT fuser: CUDA kernels generated at run time and compiled with NVRTC, specialised on "
    "dtype, Vp/H and flags, with an on-disk kernel cache; Megatron's fused vocab-parallel cross "
    "entropy (2 collectives) and LayerNorm/RMSNorm/L2Norm",
    probe,
    &kCrossEntropy,
    &kNorm,
    kBuildInfo,
};

}  // namespace
}  // namespace switchyard::fused

extern "C" SY_PLUGIN_EXPORT const sy_plugin* sy_plugin_v1(const sy_host* host) {
  using namespace switchyard::fused;
  try {
    set_host(host);
    // A malformed cache option is caught at load, where the operator sees it, not at the
    // first call in the middle of a step.
    const std::string problem = option_problem();
    if (!problem.empty()) {
      log(SY_LOG_ERROR, problem);
      return nullptr;
    }
    return &kPlugin;
  } catch (...) {
    return nullptr;
  }
}
