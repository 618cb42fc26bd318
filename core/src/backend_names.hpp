// Backend names: the built-in set, deprecated aliases, and the plugin file naming rule.
#ifndef SWITCHYARD_CORE_BACKEND_NAMES_HPP
#define SWITCHYARD_CORE_BACKEND_NAMES_HPP

#include <optional>
#include <string>
#include <vector>

namespace switchyard::detail {

// native, fused, apex, liger, te — the backends this project ships.
const std::vector<std::string>& builtin_backends();

// The new name for a deprecated one (megatron -> native, megatron_fused -> fused,
// fused_layer_norm -> apex, torch_norm -> native, transformer_engine -> te), else nullopt.
std::optional<std::string> renamed_backend(const std::string& name);

// True for [a-z0-9_]+.
bool valid_plugin_name(const std::string& name);

// "libswitchyard-<name>.so"; and the inverse (nullopt when the file does not follow it).
std::string plugin_file_name(const std::string& name);
std::optional<std::string> plugin_name_from_file(const std::string& file_name);

// True when the value names a file rather than a backend (contains '/' or ends in ".so").
bool looks_like_path(const std::string& value);

}  // namespace switchyard::detail

#endif
