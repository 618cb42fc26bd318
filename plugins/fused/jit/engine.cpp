#include "engine.hpp"

#include "disk_cache.hpp"
#include "nvrtc_library.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace switchyard::fused::jit {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string ms_text(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f ms", ms);
  return buffer;
}

std::string arch_name(int arch) { return "sm_" + std::to_string(arch); }

uint64_t unix_ms_now() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

Engine::Engine(ModuleLoader& loader, LogFunction log) : loader_(loader), log_(std::move(log)) {}

Hash128 Engine::key_of(const ModuleRequest& request, int device_arch, uint32_t nvrtc_version,
                       uint32_t driver_version, const std::vector<std::string>& options) {
  std::string material = "switchyard fused JIT\nformat " + std::to_string(cache::kFormatVersion) +
                         "\narch " + std::to_string(device_arch) + "\nnvrtc " +
                         std::to_string(nvrtc_version) + "\ndriver " +
                         std::to_string(driver_version) + "\noptions";
  for (const std::string& option : options) material += " " + option;
  material += "\nkernels";
  for (const std::string& name : request.kernel_names) material += " " + name;
  material += "\nsource " + std::to_string(request.source.size()) + "\n";
  material += request.source;
  return murmur3_128(material);
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::shared_ptr<const LoadedModule> Engine::module(const ModuleRequest& request,
                                                   const DeviceTarget& target,
                                                   const CacheSettings& settings) {
  std::string error;
  const std::shared_ptr<const NvrtcLibrary> nvrtc = NvrtcLibrary::load(settings.nvrtc_library, &error);
  if (!nvrtc) sy::fail(SY_ERR_UNAVAILABLE, error);
  const CompileTarget compile_target = choose_target(*nvrtc, target.arch);
  const Hash128 key =
      key_of(request, target.arch, nvrtc->version(), target.driver_version, compile_target.options);

  std::promise<std::shared_ptr<const LoadedModule>> promise;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (auto found = modules_.find(key); found != modules_.end()) {
      ++stats_.memory_hits;
      return found->second;
    }
    if (auto building = in_flight_.find(key); building != in_flight_.end()) {
      std::shared_future<std::shared_ptr<const LoadedModule>> pending = building->second;
      lock.unlock();
      return pending.get();  // built by another thread; rethrows its failure
    }
    in_flight_.emplace(key, promise.get_future().share());
  }
  std::shared_ptr<const LoadedModule> loaded;
  try {
    loaded = build(request, target, settings, key, compile_target, *nvrtc);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_.erase(key);  // a later call tries again
    promise.set_exception(std::current_exception());
    throw;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  modules_.emplace(key, loaded);
  in_flight_.erase(key);
  promise.set_value(loaded);
  return loaded;
}

std::shared_ptr<const LoadedModule> Engine::build(const ModuleRequest& request,
                                                  const DeviceTarget& target,
                                                  const CacheSettings& settings, const Hash128& key,
                                                  const CompileTarget& compile_target,
                                                  const NvrtcLibrary& nvrtc) {
  const Clock::time_point start = Clock::now();
  const bool use_disk = !settings.disabled && !settings.folder.empty();
  const DiskCache disk(settings.folder, settings.max_bytes);
  const std::string what = request.description + " for " + arch_name(target.arch);

  if (use_disk) {
    std::string problem;
    if (std::optional<DiskCache::Hit> hit = disk.load(key, &problem)) {
      try {
        auto loaded = loader_.load(hit->payload(), hit->entry.info.kind, request.kernel_names);
        const double ms = milliseconds_since(start);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          ++stats_.disk_hits;
          stats_.last_disk_load_ms = stats_.last_build_ms = ms;
        }
        log_(SY_LOG_INFO, "JIT cache hit: " + what + " loaded from " + hit->path + " in " +
                              ms_text(ms) + " (key " + key.hex() + ")");
        return loaded;
      } catch (const sy::Failure& failure) {
        // A verified entry the driver rejects (a driver downgrade, a foreign file): never use
        // it again.
        ::unlink(hit->path.c_str());
        log_(SY_LOG_WARN, "JIT cache entry " + hit->path + " for " + what +
                              " did not load (" + failure.what() + "); deleted, compiling again");
      }
    } else if (!problem.empty()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.corrupt_entries;
      }
      log_(SY_LOG_WARN, "JIT cache entry " + problem + "; compiling " + what + " again");
    }
  }

  const std::string program = "switchyard_fused_" + key.hex() + ".cu";
  const CompileOutput output = compile(nvrtc, request.source, program, compile_target);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.compiles;
    stats_.compile_ms_total += output.milliseconds;
    stats_.last_compile_ms = output.milliseconds;
  }
  log_(SY_LOG_INFO, "JIT compile: " + what + " with NVRTC " + cache::version_text(nvrtc.version()) +
                        " (" + cache::payload_kind_name(compile_target.kind) + " " +
                        (compile_target.kind == cache::PayloadKind::Cubin ? "sm_" : "compute_") +
                        std::to_string(compile_target.code_arch) + ") in " +
                        ms_text(output.milliseconds) + " (key " + key.hex() + ")");
  if (!output.log.empty()) log_(SY_LOG_DEBUG, "NVRTC log for " + what + ":\n" + output.log);

  if (use_disk) {
    cache::EntryInfo info;
    info.key = key;
    info.arch = static_cast<uint32_t>(target.arch);
    info.kind = compile_target.kind;
    info.nvrtc_version = nvrtc.version();
    info.driver_version = target.driver_version;
    info.created_unix_ms = unix_ms_now();
    info.compile_us = static_cast<uint64_t>(output.milliseconds * 1000.0);
    info.description = request.description;
    std::string problem;
    if (disk.store(info, output.payload, &problem)) {
      log_(SY_LOG_DEBUG, "JIT cache: stored " + what + " as " + disk.path_of(key));
    } else {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.store_failures;
      }
      log_(SY_LOG_WARN, "JIT cache: could not store " + what + ": " + problem +
                            "; the next process compiles it again");
    }
  } else {
    log_(SY_LOG_DEBUG, std::string("JIT cache not used for ") + what + ": " +
                           (settings.disabled ? "disabled by the option cache_disable"
                                              : "no cache folder (set SWITCHYARD_CACHE_DIR)"));
  }
  auto loaded = loader_.load(output.payload, compile_target.kind, request.kernel_names);
  const double ms = milliseconds_since(start);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.last_build_ms = ms;
  }
  return loaded;
}

}  // namespace switchyard::fused::jit
