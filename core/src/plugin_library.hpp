// One plugin .so opened in this process: dlopen, entry call, descriptor validation, and
// host-side full-size copies of its tables (defaults filled in for fields an older plugin
// does not have; fields of a newer minor ignored).
#ifndef SWITCHYARD_CORE_PLUGIN_LIBRARY_HPP
#define SWITCHYARD_CORE_PLUGIN_LIBRARY_HPP

#include "host_services.hpp"

#include <switchyard/switchyard.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace switchyard::detail {

// Sizes of the v1.0 structs: the least a plugin may hand over. Frozen with v1.0 (the ABI
// test compares them with tests/abi/v1_0); never derive them from a newer field.
constexpr std::size_t kPluginV1_0Size = offsetof(sy_plugin, build_info);
constexpr std::size_t kCrossEntropyV1_0Size = offsetof(sy_cross_entropy, forward_collectives);
constexpr std::size_t kNormV1_0Size = sizeof(sy_norm);
// The most a plugin may claim: anything larger is garbage, not a future minor.
constexpr std::size_t kMaxStructSize = 64 * 1024;

class PluginLibrary;

struct LoadOptions {
  bool probe = true;     // run probe() after validation (state Ok or Unavailable)
  bool isolated = false;  // in the child of isolated_load: no spdlog, no locks
};

struct LoadResult {
  std::shared_ptr<const PluginLibrary> library;  // null unless the descriptor is valid
  PluginInfo info;  // Rejected with the reason; Ok / Unavailable when valid
};

class PluginLibrary {
 public:
  // Never throws for a bad plugin: the result says what is wrong. Lines the plugin logs
  // while loading and probing go to info.log (and, unless isolated, to the logger).
  static LoadResult load(const std::string& path, std::shared_ptr<const HostServices> host,
                         LoadOptions options = {});

  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& path() const { return path_; }
  // Host-side copies with struct_size = sizeof(host struct); family pointers point at the
  // copies below (null when the family is not offered).
  const sy_plugin& descriptor() const { return descriptor_; }
  const sy_cross_entropy* cross_entropy() const;
  const sy_norm* norm() const;
  const HostServices& host() const { return *host_; }

  // Runs probe(). SY_OK, or the status with a sentence in *reason.
  sy_status probe(std::string* reason, std::vector<std::string>* captured_log = nullptr,
                  bool isolated = false) const;

  struct Handle;  // the open library (Boost.DLL); defined in the .cpp

 private:
  PluginLibrary() = default;

  // Declaration order is destruction order reversed: the tables go first, then the library
  // is closed, and the host services (whose strings the plugin may hold) outlive it.
  std::shared_ptr<const HostServices> host_;
  std::unique_ptr<Handle> handle_;
  std::string path_;
  sy_plugin descriptor_{};
  sy_cross_entropy cross_entropy_{};
  sy_norm norm_{};
};

// Fills the descriptor-derived fields of `info` (name, versions, families...).
void describe_descriptor(const sy_plugin& descriptor, std::int32_t descriptor_struct_size,
                         std::int32_t cross_entropy_struct_size,
                         std::int32_t norm_struct_size, PluginInfo* info);

// A PluginInfo for `path` before anything is known: path, file name, name from file name.
PluginInfo blank_plugin_info(const std::string& path);

}  // namespace switchyard::detail

#endif
