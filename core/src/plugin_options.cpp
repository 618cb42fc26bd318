// Plugin option names and their lookup rule (see plugin_options.hpp).
#include "plugin_options.hpp"

#include "backend_names.hpp"

namespace switchyard::detail {

bool valid_plugin_option_key(const std::string& key) { return valid_plugin_name(key); }

std::optional<PluginOptionName> parse_plugin_option_name(const std::string& full_name,
                                                         std::string* problem) {
  const auto fail = [&](const std::string& why) -> std::optional<PluginOptionName> {
    if (problem) *problem = why;
    return std::nullopt;
  };
  const auto dot = full_name.find('.');
  if (dot == std::string::npos)
    return fail("'" + full_name + "' has no '.': expected <plugin>.<key>, e.g. fused.cache_dir");
  PluginOptionName name{full_name.substr(0, dot), full_name.substr(dot + 1)};
  if (name.plugin != kAnyPlugin && !valid_plugin_name(name.plugin))
    return fail("'" + name.plugin + "' in '" + full_name +
                "' is not a plugin name: expected [a-z0-9_]+ or '*' for every plugin");
  if (!valid_plugin_option_key(name.key))
    return fail("'" + name.key + "' in '" + full_name +
                "' is not an option key: expected [a-z0-9_]+");
  return name;
}

const Setting* find_plugin_option(const std::map<std::string, Setting>& options,
                                  const std::string& plugin, const std::string& key) {
  const auto specific = options.find(plugin + "." + key);
  const auto wildcard = options.find(std::string(kAnyPlugin) + "." + key);
  const Setting* specific_setting = specific == options.end() ? nullptr : &specific->second;
  const Setting* wildcard_setting = wildcard == options.end() ? nullptr : &wildcard->second;
  if (!specific_setting) return wildcard_setting;
  if (!wildcard_setting) return specific_setting;
  // Source enumerators run from highest precedence (Api) to lowest (Default).
  return wildcard_setting->source < specific_setting->source ? wildcard_setting : specific_setting;
}

}  // namespace switchyard::detail
