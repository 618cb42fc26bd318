// Backend names: the shipped set, the deprecated aliases, and the plugin file naming rule.
#include "backend_names.hpp"

#include <map>

namespace switchyard::detail {
namespace {

constexpr const char* kFilePrefix = "libswitchyard-";
constexpr const char* kFileSuffix = ".so";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const std::vector<std::string>& builtin_backends() {
  static const std::vector<std::string> names{"native", "fused", "apex", "liger", "te"};
  return names;
}

std::optional<std::string> renamed_backend(const std::string& name) {
  // Names users of Megatron-Core and older Switchyard configs already write.
  static const std::map<std::string, std::string> renamed{
      {"megatron", "native"},   {"megatron_fused", "fused"},  {"fused_layer_norm", "apex"},
      {"torch_norm", "native"}, {"transformer_engine", "te"},
  };
  const auto found = renamed.find(name);
  if (found == renamed.end()) return std::nullopt;
  return found->second;
}

bool valid_plugin_name(const std::string& name) {
  if (name.empty()) return false;
  for (const char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!allowed) return false;
  }
  return true;
}

std::string plugin_file_name(const std::string& name) {
  return std::string(kFilePrefix) + name + kFileSuffix;
}

std::optional<std::string> plugin_name_from_file(const std::string& file_name) {
  const std::string prefix(kFilePrefix), suffix(kFileSuffix);
  if (file_name.size() <= prefix.size() + suffix.size()) return std::nullopt;
  if (file_name.compare(0, prefix.size(), prefix) != 0 || !ends_with(file_name, suffix))
    return std::nullopt;
  std::string name =
      file_name.substr(prefix.size(), file_name.size() - prefix.size() - suffix.size());
  if (!valid_plugin_name(name)) return std::nullopt;
  return name;
}

bool looks_like_path(const std::string& value) {
  return value.find('/') != std::string::npos || ends_with(value, kFileSuffix);
}

}  // namespace switchyard::detail
