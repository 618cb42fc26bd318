// Plugin options: the values a plugin reads through sy_host.option(plugin, key).
//
// An option is stored under "<plugin>.<key>", or "*.<key>" for every plugin (what
// SWITCHYARD_CACHE_DIR sets). Plugin names and keys are both [a-z0-9_]+, so that every option
// can be written in every source, the environment included
// (SWITCHYARD_OPTION_<PLUGIN>__<KEY>).
//
// Lookup of (plugin, key): the stored "<plugin>.<key>" and "*.<key>" are compared by source,
// and the higher-precedence one wins (SWITCHYARD_CACHE_DIR in a job script beats a config
// file's [plugin.fused] cache_dir, as every other environment variable beats the file); from
// the same source, the plugin-specific one wins over the wildcard. resolve_settings drops a
// specific option that a higher-precedence wildcard shadows, so on Settings::plugin_options a
// plain "specific, else wildcard" lookup (HostServices::option) gives the same answer.
#ifndef SWITCHYARD_CORE_PLUGIN_OPTIONS_HPP
#define SWITCHYARD_CORE_PLUGIN_OPTIONS_HPP

#include <switchyard/switchyard.hpp>

#include <map>
#include <optional>
#include <string>

namespace switchyard::detail {

// The plugin part that applies to every plugin.
inline constexpr const char* kAnyPlugin = "*";

struct PluginOptionName {
  std::string plugin;  // a plugin name or "*"
  std::string key;
};

// Splits "fused.cache_dir" at the first '.'. On a malformed name returns nullopt and, when
// `problem` is given, says what is wrong with it.
std::optional<PluginOptionName> parse_plugin_option_name(const std::string& full_name,
                                                         std::string* problem = nullptr);

// True for [a-z0-9_]+ (the plugin name rule, applied to keys as well).
bool valid_plugin_option_key(const std::string& key);

// The resolved option for `plugin` and `key`, or nullptr when neither the specific nor the
// wildcard form is set. The pointer lives as long as `options`.
const Setting* find_plugin_option(const std::map<std::string, Setting>& options,
                                  const std::string& plugin, const std::string& key);

}  // namespace switchyard::detail

#endif
