// What one source of settings (API, command line, environment, config file) said. Each
// reader fills a layer; resolve_settings merges the layers by precedence. A layer holds
// values already validated and put in canonical form, each with its source and origin.
#ifndef SWITCHYARD_CORE_SETTINGS_LAYER_HPP
#define SWITCHYARD_CORE_SETTINGS_LAYER_HPP

#include <switchyard/switchyard.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::detail {

struct SettingsWarning {
  std::string text;
  // Non-empty: logged only the first time this key is seen in the process (deprecations).
  // Settings::warnings lists the warning on every resolution either way.
  std::string once_key;
};

struct SettingsLayer {
  std::optional<Setting> cross_entropy, norm, norm_kind, deterministic, log_level, config_file,
      system_path;
  std::vector<Setting> plugin_path;  // in the order given
  std::vector<Setting> disable;
  std::map<std::string, Setting> plugin_options;  // "fused.cache_dir", "*.cache_dir"
  std::vector<SettingsWarning> warnings;
  // Set when the value was derived from Megatron's flags rather than named directly, so
  // that overriding an explicit lower-precedence choice can be pointed out.
  bool cross_entropy_from_megatron = false;
  bool norm_from_megatron = false;

  void warn(std::string text) { warnings.push_back({std::move(text), {}}); }
};

inline Setting make_setting(std::string value, Source source, std::string origin) {
  Setting s;
  s.value = std::move(value);
  s.source = source;
  s.origin = std::move(origin);
  return s;
}

}  // namespace switchyard::detail

#endif
