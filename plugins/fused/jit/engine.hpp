// The JIT engine: generated source -> loaded module, through three levels of cache.
//
//   1. memory: modules loaded in this process, by key (thread-safe; a module being built is
//      built once, however many threads ask for it at the same time);
//   2. disk: cache entries (cache_format.hpp), unless the cache is disabled;
//   3. NVRTC: compile, store on disk, load.
//
// The key is murmur3_128 of the format version, the device architecture, the NVRTC version,
// the CUDA driver version, the NVRTC options, the kernel names and the source, so a change in
// any of them compiles afresh. Loading a module onto the device is injected (ModuleLoader):
// the plugin loads cubins with the CUDA runtime, the tests with a fake, so that everything
// but the GPU is tested on a machine without one.
#ifndef SWITCHYARD_FUSED_JIT_ENGINE_HPP
#define SWITCHYARD_FUSED_JIT_ENGINE_HPP

#include "cache_format.hpp"
#include "hash128.hpp"
#include "nvrtc_compile.hpp"

#include <switchyard/abi.h>

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::fused::jit {

// A module on the device: its kernels' handles, in the order they were asked for. Never
// unloaded: modules live as long as the process (the CUDA context owns them).
struct LoadedModule {
  virtual ~LoadedModule() = default;
  std::vector<const void*> kernels;
};

class ModuleLoader {
 public:
  virtual ~ModuleLoader() = default;
  // Loads a cubin or PTX payload and looks up `kernel_names`. Throws sy::Failure.
  virtual std::shared_ptr<const LoadedModule> load(std::string_view payload, cache::PayloadKind kind,
                                                   const std::vector<std::string>& kernel_names) = 0;
};

// What to build: a source and the kernels it defines.
struct ModuleRequest {
  std::string description;  // what it specialises; kept in the cache entry and in logs
  std::string source;
  std::vector<std::string> kernel_names;
};

// Where it will run.
struct DeviceTarget {
  int arch = 0;                 // major*10+minor
  uint32_t driver_version = 0;  // cudaDriverGetVersion
};

// Where the disk cache is and whether to use it (from the plugin options, read per call).
struct CacheSettings {
  std::string folder;  // empty: no disk cache
  bool disabled = false;
  int64_t max_bytes = cache::kDefaultMaxBytes;
  std::string nvrtc_library;  // plugin option nvrtc_library; empty: the default search
};

// Counters and timings, for logs, tests and `switchyard-fused-startup`.
struct EngineStats {
  int64_t memory_hits = 0;
  int64_t disk_hits = 0;
  int64_t compiles = 0;
  int64_t corrupt_entries = 0;   // found on disk, deleted, compiled again
  int64_t store_failures = 0;
  double compile_ms_total = 0;   // NVRTC time
  double last_compile_ms = 0;    // NVRTC time of the latest compile
  double last_build_ms = 0;      // latest miss of the memory cache: key to loaded module
  double last_disk_load_ms = 0;  // latest disk hit: read, verify, load
};

using LogFunction = std::function<void(sy_log_level, const std::string&)>;

class Engine {
 public:
  Engine(ModuleLoader& loader, LogFunction log);

  // The module for `request` on `target`. Throws sy::Failure: SY_ERR_UNAVAILABLE when NVRTC
  // cannot be loaded or knows no architecture the device runs, SY_ERR_INTERNAL when the
  // source does not compile or the module does not load.
  std::shared_ptr<const LoadedModule> module(const ModuleRequest& request, const DeviceTarget& target,
                                             const CacheSettings& settings);

  EngineStats stats() const;

  // The key a request gets (exposed for tests and tools).
  static Hash128 key_of(const ModuleRequest& request, int device_arch, uint32_t nvrtc_version,
                        uint32_t driver_version, const std::vector<std::string>& options);

 private:
  std::shared_ptr<const LoadedModule> build(const ModuleRequest& request, const DeviceTarget& target,
                                            const CacheSettings& settings, const Hash128& key,
                                            const CompileTarget& compile_target,
                                            const NvrtcLibrary& nvrtc);

  ModuleLoader& loader_;
  LogFunction log_;
  mutable std::mutex mutex_;
  std::map<Hash128, std::shared_ptr<const LoadedModule>> modules_;
  std::map<Hash128, std::shared_future<std::shared_ptr<const LoadedModule>>> in_flight_;
  EngineStats stats_;
};

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_ENGINE_HPP
