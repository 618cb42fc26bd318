// The native plugin's descriptor, entry point and device dispatch. Argument checking that does
// not depend on the device is in *_validate; the CPU implementation in *_cpu; the CUDA one in
// cuda/ (built when the CUDA toolkit is found: SWITCHYARD_NATIVE_CUDA).
#include "ce_cpu.hpp"
#include "ce_validate.hpp"
#include "norm_cpu.hpp"
#include "norm_validate.hpp"
#include "plugin_state.hpp"
#include "thread_pool.hpp"

#if SWITCHYARD_NATIVE_CUDA
#include "cuda/ce_cuda.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/norm_cuda.hpp"
#endif

#include <switchyard/plugin.h>
#include <switchyard/plugin_helpers.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace switchyard::native {
namespace {

constexpr int kMaxThreads = 1024;

enum class Path { Cpu, Cuda };

// The path that serves `device`; UNSUPPORTED for a device type this build has no path for.
Path path_of(DLDevice device) {
  if (device.device_type == kDLCPU) return Path::Cpu;
#if SWITCHYARD_NATIVE_CUDA
  if (device.device_type == kDLCUDA) return Path::Cuda;
  sy::fail(SY_ERR_UNSUPPORTED, "problem.device = " + sy::device_name(device) +
                                   ": native runs on CPU tensors (cpu:N) and CUDA device "
                                   "memory (cuda:N); copy the tensors to one of those");
#else
  sy::fail(SY_ERR_UNSUPPORTED, "problem.device = " + sy::device_name(device) +
                                   ": this build of native runs on the CPU only (cpu:N; it was "
                                   "built without the CUDA toolkit); use a CUDA backend (fused, "
                                   "apex, liger, te) for GPU tensors, or rebuild with CUDA");
#endif
}

// The path, and that it can run on this machine: a CUDA problem needs a usable GPU (probe says
// SY_OK without one, because the CPU path always runs; see README "CUDA").
Path require_runnable(DLDevice device) {
  const Path path = path_of(device);
#if SWITCHYARD_NATIVE_CUDA
  if (path == Path::Cuda) cuda::require_cuda_device(device);
#endif
  return path;
}

int64_t ce_workspace_bytes(const sy_ce_problem& problem, Path path) {
#if SWITCHYARD_NATIVE_CUDA
  if (path == Path::Cuda) return cuda::ce_cuda_workspace_bytes(problem);
#endif
  (void)path;
  return ce_cpu_workspace_bytes(problem);
}

int64_t norm_workspace_bytes(const sy_norm_problem& problem, Path path) {
#if SWITCHYARD_NATIVE_CUDA
  if (path == Path::Cuda) return cuda::norm_cuda_workspace_bytes(problem);
#endif
  (void)path;
  return norm_cpu_workspace_bytes(problem);
}

// ---- cross entropy ------------------------------------------------------------------------

sy_status ce_supports(const sy_ce_problem* problem, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_ce_problem(problem);
    require_runnable(problem->device);
  });
}

// Pure: no device is asked (supports() says whether the problem can run here).
sy_status ce_workspace_size(const sy_ce_problem* problem, int64_t* bytes, sy_error* err) {
  return sy::guarded(err, [&] {
    if (bytes == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "bytes (the output pointer) is NULL");
    validate_ce_problem(problem);
    *bytes = ce_workspace_bytes(*problem, path_of(problem->device));
  });
}

sy_status ce_forward(const sy_ce_forward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    const sy_ce_problem& problem = ce_problem_of(args);
    validate_ce_problem(&problem);
    const Path path = require_runnable(problem.device);
    validate_ce_forward(args, ce_workspace_bytes(problem, path));
#if SWITCHYARD_NATIVE_CUDA
    if (path == Path::Cuda) return cuda::ce_cuda_forward(*args);
#endif
    ce_cpu_forward(*args);
  });
}

sy_status ce_backward(const sy_ce_backward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    const sy_ce_problem& problem = ce_problem_of(args);
    validate_ce_problem(&problem);
    const Path path = require_runnable(problem.device);
    validate_ce_backward(args);
#if SWITCHYARD_NATIVE_CUDA
    if (path == Path::Cuda) return cuda::ce_cuda_backward(*args);
#endif
    (void)path;
    ce_cpu_backward(*args);
  });
}

int32_t ce_forward_collectives(const sy_ce_problem* problem) {
  if (problem == nullptr || problem->struct_size < sizeof(sy_ce_problem)) return -1;
  return ce_cpu_forward_collectives(*problem);
}

// ---- normalization ------------------------------------------------------------------------

sy_status norm_supports(const sy_norm_problem* problem, sy_error* err) {
  return sy::guarded(err, [&] {
    validate_norm_problem(problem);
    require_runnable(problem->device);
  });
}

sy_status norm_workspace_size(const sy_norm_problem* problem, int64_t* bytes, sy_error* err) {
  return sy::guarded(err, [&] {
    if (bytes == nullptr) sy::fail(SY_ERR_INVALID_ARGUMENT, "bytes (the output pointer) is NULL");
    validate_norm_problem(problem);
    *bytes = norm_workspace_bytes(*problem, path_of(problem->device));
  });
}

sy_status norm_forward(const sy_norm_forward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    const sy_norm_problem& problem = norm_problem_of(args);
    validate_norm_problem(&problem);
    const Path path = require_runnable(problem.device);
    validate_norm_forward(args, norm_workspace_bytes(problem, path));
#if SWITCHYARD_NATIVE_CUDA
    if (path == Path::Cuda) return cuda::norm_cuda_forward(*args);
#endif
    norm_cpu_forward(*args);
  });
}

sy_status norm_backward(const sy_norm_backward_args* args, sy_error* err) {
  return sy::guarded(err, [&] {
    const sy_norm_problem& problem = norm_problem_of(args);
    validate_norm_problem(&problem);
    const Path path = require_runnable(problem.device);
    validate_norm_backward(args, norm_workspace_bytes(problem, path));
#if SWITCHYARD_NATIVE_CUDA
    if (path == Path::Cuda) return cuda::norm_cuda_backward(*args);
#endif
    norm_cpu_backward(*args);
  });
}

// ---- descriptor ---------------------------------------------------------------------------

// SY_OK everywhere: the CPU path runs on every machine. What the CUDA path can do here is
// logged (and said by supports() for a CUDA problem, with the reason when it cannot run).
sy_status probe(sy_error* err) {
  return sy::guarded(err, [] {
#if SWITCHYARD_NATIVE_CUDA
    log(SY_LOG_INFO, cuda::cuda_status().describe());
#endif
  });
}

constexpr uint32_t kDtypes = SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16;
#if SWITCHYARD_NATIVE_CUDA
constexpr uint32_t kDevices = SY_DEVICE_BIT(kDLCPU) | SY_DEVICE_BIT(kDLCUDA);
#else
constexpr uint32_t kDevices = SY_DEVICE_BIT(kDLCPU);
#endif

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
        SY_NORM_FEATURE_MEMORY_EFFICIENT | SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT,
    SY_DETERMINISTIC,
    norm_supports,
    norm_workspace_size,
    norm_forward,
    norm_backward,
};

#if defined(__clang__)
#define SY_NATIVE_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define SY_NATIVE_COMPILER "gcc " __VERSION__
#else
#define SY_NATIVE_COMPILER "unknown compiler"
#endif

#if SWITCHYARD_NATIVE_CUDA
#define SY_NATIVE_CUDA_INFO                                                                 \
  "CUDA path: unfused kernels for CUDA architectures " SWITCHYARD_NATIVE_CUDA_ARCHITECTURES \
  ", CUDA " SWITCHYARD_NATIVE_CUDA_TOOLKIT                                                 \
  ", runtime linked statically (loads without a GPU or driver)"
#else
#define SY_NATIVE_CUDA_INFO "CUDA path: not built"
#endif

constexpr const char* kBuildInfo =
    SY_NATIVE_COMPILER ", C++17, " SWITCHYARD_NATIVE_BUILD_TYPE
    " build; CPU path: std::thread pool (plugin option native.threads), fp32 workspace copy "
    "of the logits, double accumulation; " SY_NATIVE_CUDA_INFO;

const sy_plugin kPlugin = {
    sizeof(sy_plugin),
    SY_ABI_MAJOR,
    SY_ABI_MINOR,
    kPluginName,
    kPluginVersion,
    "Switchyard",
#if SWITCHYARD_NATIVE_CUDA
    "Reference backend: Megatron's eager vocab-parallel cross entropy (3 all-reduces) and "
    "LayerNorm/RMSNorm/L2Norm on the CPU (multithreaded) and on CUDA (one kernel per eager "
    "op), bit-exact from run to run",
#else
    "Reference backend: Megatron's eager vocab-parallel cross entropy (3 all-reduces) and "
    "LayerNorm/RMSNorm/L2Norm on the CPU, multithreaded and bit-exact for any thread count",
#endif
    probe,
    &kCrossEntropy,
    &kNorm,
    kBuildInfo,
};

// The "threads" option: unset, "" or "auto" -> default; else an integer in [1, kMaxThreads].
bool thread_option(const char* value, int* threads, std::string* problem) {
  const int fallback = default_threads();
  if (value == nullptr || value[0] == '\0' || std::string(value) == "auto") {
    *threads = fallback;
    return true;
  }
  errno = 0;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || parsed < 1 || parsed > kMaxThreads) {
    *problem = std::string("option native.threads = \"") + value +
               "\" is not an integer in [1, " + std::to_string(kMaxThreads) +
               "] or \"auto\"; fix it, or unset it to use " + std::to_string(fallback) +
               " threads (the hardware concurrency)";
    return false;
  }
  *threads = static_cast<int>(parsed);
  return true;
}

}  // namespace
}  // namespace switchyard::native

extern "C" SY_PLUGIN_EXPORT const sy_plugin* sy_plugin_v1(const sy_host* host) {
  using namespace switchyard::native;
  try {
    set_host(host);
    int threads = 1;
    std::string problem;
    if (!thread_option(sy::option(host, kPluginName, "threads"), &threads, &problem)) {
      log(SY_LOG_ERROR, problem);
      return nullptr;
    }
    // Threads start lazily, on the first call that has enough work for them.
    ThreadPool::instance().set_threads(threads);
    log(SY_LOG_DEBUG, "native " + std::string(kPluginVersion) + ": CPU path with " +
                          std::to_string(threads) + " threads");
    return &kPlugin;
  } catch (...) {
    return nullptr;
  }
}
