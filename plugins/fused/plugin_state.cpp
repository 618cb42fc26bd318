#include "plugin_state.hpp"

#include "cuda_device.hpp"
#include "jit/cache_format.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace switchyard::fused {
namespace {

std::atomic<const sy_host*> g_host{nullptr};

// The specialisation and the device, as a small fixed key: the per-call lookup allocates
// nothing.
using SpecKey = std::array<int64_t, 12>;

class KernelTable {
 public:
  std::shared_ptr<const jit::LoadedModule> find(const SpecKey& key) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    const auto found = modules_.find(key);
    return found == modules_.end() ? nullptr : found->second;
  }
  void insert(const SpecKey& key, std::shared_ptr<const jit::LoadedModule> module) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    modules_.emplace(key, std::move(module));
  }
  cuda::DeviceInfo device(int device) {
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      const auto found = devices_.find(device);
      if (found != devices_.end()) return found->second;
    }
    const cuda::DeviceInfo info = cuda::device_info(device);
    std::unique_lock<std::shared_mutex> lock(mutex_);
    devices_.emplace(device, info);
    return info;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<SpecKey, std::shared_ptr<const jit::LoadedModule>> modules_;
  std::map<int, cuda::DeviceInfo> devices_;
};

KernelTable& table() {
  static KernelTable instance;
  return instance;
}

jit::Engine& engine() {
  static cuda::CudaModuleLoader loader;
  static jit::Engine instance(loader, [](sy_log_level level, const std::string& message) {
    log(level, message);
  });
  return instance;
}

std::string ms_text(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f ms", ms);
  return buffer;
}

// The module for `key` on `device`: from the table, or built now from make_request() (called
// only on a miss, so the per-call path builds no string).
template <class MakeRequest>
std::shared_ptr<const jit::LoadedModule> module_for(const SpecKey& key, int device,
                                                    MakeRequest&& make_request) {
  if (auto module = table().find(key)) return module;
  const auto start = std::chrono::steady_clock::now();
  const cuda::DeviceInfo info = table().device(device);
  const jit::ModuleRequest request = make_request();
  auto module = engine().module(request, {info.arch, info.driver_version}, cache_settings());
  table().insert(key, module);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log(SY_LOG_INFO, "JIT ready: " + request.description + " on cuda:" + std::to_string(device) +
                       " in " + ms_text(ms) + " (first use: source, cache or compile, load)");
  return module;
}

template <size_t N>
std::array<const void*, N> kernels_of(const jit::LoadedModule& module) {
  std::array<const void*, N> kernels{};
  for (size_t i = 0; i < N; ++i) kernels[i] = module.kernels.at(i);
  return kernels;
}

}  // namespace

void set_host(const sy_host* host) { g_host.store(host); }

void log(sy_log_level level, const std::string& message) {
  sy::log(g_host.load(), level, kPluginName, message);
}

const char* option(const char* key) { return sy::option(g_host.load(), kPluginName, key); }

std::string option_problem() {
  const jit::cache::Location where = jit::cache::resolve_location(
      option(jit::cache::kOptionDir), option(jit::cache::kOptionDisable),
      option(jit::cache::kOptionMaxBytes));
  if (where.problem.empty()) return {};
  return "plugin " + where.problem +
         "; fix it where it is set (SWITCHYARD_CACHE_DISABLE, SWITCHYARD_OPTION_FUSED__<KEY>, "
         "--plugin-option fused.<key>=..., or [plugin.fused] in the config file)";
}

jit::CacheSettings cache_settings() {
  const jit::cache::Location where = jit::cache::resolve_location(
      option(jit::cache::kOptionDir), option(jit::cache::kOptionDisable),
      option(jit::cache::kOptionMaxBytes));
  if (!where.problem.empty()) sy::fail(SY_ERR_INVALID_ARGUMENT, option_problem());
  jit::CacheSettings settings;
  settings.folder = where.folder;
  settings.disabled = where.disabled;
  settings.max_bytes = where.max_bytes;
  const char* nvrtc = option("nvrtc_library");
  settings.nvrtc_library = nvrtc != nullptr ? nvrtc : "";
  return settings;
}

CeKernels ce_kernels(const jit::CeSpecialization& spec, int device) {
  const SpecKey key = {0,
                       device,
                       static_cast<int64_t>(spec.logits),
                       static_cast<int64_t>(spec.grad),
                       spec.labels64,
                       spec.vocab_local,
                       spec.smoothing,
                       spec.argmax,
                       0,
                       0,
                       0,
                       0};
  const auto module = module_for(key, device, [&] {
    return jit::ModuleRequest{spec.description(), jit::ce_source(spec), jit::ce_kernel_names()};
  });
  return kernels_of<jit::kCeKernelCount>(*module);
}

NormKernels norm_kernels(const jit::NormSpecialization& requested, int device) {
  const jit::NormSpecialization spec = requested.canonical();
  const SpecKey key = {1,
                       device,
                       static_cast<int64_t>(spec.kind),
                       spec.hidden,
                       static_cast<int64_t>(spec.x),
                       static_cast<int64_t>(spec.y),
                       static_cast<int64_t>(spec.weight),
                       static_cast<int64_t>(spec.grad_weight),
                       spec.zero_centered,
                       spec.residual,
                       spec.memory_efficient,
                       spec.accumulate};
  const auto module = module_for(key, device, [&] {
    return jit::ModuleRequest{spec.description(), jit::norm_source(spec), jit::norm_kernel_names()};
  });
  return kernels_of<jit::kNormKernelCount>(*module);
}

jit::EngineStats engine_stats() { return engine().stats(); }

}  // namespace switchyard::fused
