// resolve_settings: every source read into a layer, then merged by precedence
// (API > command line > environment > config file > built-in default).
#include "command_line.hpp"
#include "config_file.hpp"
#include "environment.hpp"
#include "log.hpp"
#include "plugin_options.hpp"
#include "setting_values.hpp"
#include "settings_layer.hpp"

#include <switchyard/switchyard.hpp>

#include <iterator>
#include <set>

namespace switchyard {
namespace detail {
namespace {

constexpr const char* kDefaultOrigin = "built-in default";

std::string require_value(const std::string& value, const std::string& field,
                          const std::string& expected) {
  const std::string trimmed = trim(value);
  if (trimmed.empty())
    throw_invalid_setting(field + " is empty: expected " + expected + ", or leave it unset.");
  return trimmed;
}

SettingsLayer read_api(const RuntimeOptions& options) {
  SettingsLayer layer;
  const auto api = [](std::string value, const std::string& field) {
    return make_setting(std::move(value), Source::Api, field);
  };
  const std::string backend = "a backend name (native, fused, apex, liger, te) or a path to a .so";
  if (options.cross_entropy) {
    const std::string field = "RuntimeOptions::cross_entropy";
    layer.cross_entropy = api(require_value(*options.cross_entropy, field, backend), field);
  }
  if (options.norm) {
    const std::string field = "RuntimeOptions::norm";
    layer.norm = api(require_value(*options.norm, field, backend), field);
  }
  if (options.norm_kind) {
    const std::string field = "RuntimeOptions::norm_kind";
    layer.norm_kind = api(canonical_norm_kind(*options.norm_kind, field), field);
  }
  if (options.deterministic)
    layer.deterministic = api(*options.deterministic ? "1" : "0", "RuntimeOptions::deterministic");
  if (options.config_file) {
    const std::string field = "RuntimeOptions::config_file";
    layer.config_file =
        api(require_value(*options.config_file, field, "a config file path"), field);
  }
  for (std::size_t i = 0; i < options.plugin_path.size(); ++i) {
    const std::string field = "RuntimeOptions::plugin_path[" + std::to_string(i) + "]";
    layer.plugin_path.push_back(
        api(require_value(options.plugin_path[i], field, "a plugin folder or .so file"),
            "RuntimeOptions::plugin_path"));
  }
  for (const auto& [name, value] : options.plugin_options) {
    std::string problem;
    if (!parse_plugin_option_name(name, &problem)) {
      throw_invalid_setting("RuntimeOptions::plugin_options: " + problem + ".");
    }
    layer.plugin_options[name] = api(value, "RuntimeOptions::plugin_options[" + name + "]");
  }
  return layer;
}

// Highest precedence first.
using Layers = std::vector<const SettingsLayer*>;

Setting pick(const Layers& layers, std::optional<Setting> SettingsLayer::*field,
             const std::string& default_value) {
  for (const SettingsLayer* layer : layers) {
    if (layer->*field) return *(layer->*field);
  }
  return make_setting(default_value, Source::Default, kDefaultOrigin);
}

// Search path and disable globs accumulate: higher-precedence entries come first, and a
// repeated entry keeps its first (highest) position.
std::vector<Setting> concatenate(const Layers& layers, std::vector<Setting> SettingsLayer::*field) {
  std::vector<Setting> all;
  std::set<std::string> seen;
  for (const SettingsLayer* layer : layers) {
    for (const Setting& setting : layer->*field) {
      if (seen.insert(setting.value).second) all.push_back(setting);
    }
  }
  return all;
}

// Each name takes its highest-precedence value. Then a "<plugin>.<key>" from a lower source
// than "*.<key>" is dropped: it can never win (see plugin_options.hpp), and without it a plain
// "specific, else wildcard" lookup gives the right answer.
std::map<std::string, Setting> merge_plugin_options(const Layers& layers) {
  std::map<std::string, Setting> merged;
  for (const SettingsLayer* layer : layers) {
    for (const auto& [name, setting] : layer->plugin_options) merged.emplace(name, setting);
  }
  for (auto it = merged.begin(); it != merged.end();) {
    const std::optional<PluginOptionName> name = parse_plugin_option_name(it->first);
    const auto wildcard = merged.find(std::string(kAnyPlugin) + "." + (name ? name->key : ""));
    const bool shadowed = name && name->plugin != kAnyPlugin && wildcard != merged.end() &&
                          wildcard->second.source < it->second.source;
    it = shadowed ? merged.erase(it) : std::next(it);
  }
  return merged;
}

// A Megatron flag in a trainer's argv silently beating an operator's SWITCHYARD_NORM would
// be the most confusing outcome of the precedence rule, so it is pointed out.
void note_megatron_override(const char* family, const Setting& chosen, bool from_megatron,
                            const Layers& lower, std::optional<Setting> SettingsLayer::*field,
                            const char* own_flag, std::vector<SettingsWarning>& warnings) {
  if (!from_megatron || chosen.source != Source::CommandLine) return;
  for (const SettingsLayer* layer : lower) {
    const std::optional<Setting>& overridden = layer->*field;
    if (!overridden || overridden->value == chosen.value) continue;
    warnings.push_back({std::string(family) + ": " + chosen.origin + " selects '" + chosen.value +
                            "' and overrides " + overridden->origin + " = '" + overridden->value +
                            "' (" + source_name(overridden->source) +
                            "), since the command line outranks it. To use '" + overridden->value +
                            "', pass " + own_flag + " " + overridden->value + ".",
                        {}});
    return;
  }
}

void report(const std::vector<SettingsWarning>& warnings) {
  for (const SettingsWarning& warning : warnings) {
    if (warning.once_key.empty())
      logger().warn("{}", warning.text);
    else
      warn_once(warning.once_key, warning.text);
  }
}

}  // namespace
}  // namespace detail

Settings resolve_settings(const RuntimeOptions& options) {
  using namespace detail;
  const SettingsLayer api = read_api(options);
  const SettingsLayer command_line = read_command_line(options.args);
  const SettingsLayer environment =
      read_environment(options.environment ? *options.environment : process_environment());

  SettingsLayer config;
  Settings settings;
  settings.config_file = pick({&api, &command_line, &environment}, &SettingsLayer::config_file, "");
  if (settings.config_file.source != Source::Default)
    config = read_config_file(settings.config_file);

  const Layers layers{&api, &command_line, &environment, &config};
  settings.cross_entropy = pick(layers, &SettingsLayer::cross_entropy, "native");
  settings.norm = pick(layers, &SettingsLayer::norm, "native");
  settings.norm_kind = pick(layers, &SettingsLayer::norm_kind, "RMSNorm");
  settings.deterministic = pick(layers, &SettingsLayer::deterministic, "0");
  settings.log_level = pick(layers, &SettingsLayer::log_level, "warn");
  // "" means the default folder next to libswitchyard.so, which the loader computes.
  settings.system_path = pick(layers, &SettingsLayer::system_path, "");
  settings.plugin_path = concatenate(layers, &SettingsLayer::plugin_path);
  settings.disable = concatenate(layers, &SettingsLayer::disable);
  settings.plugin_options = merge_plugin_options(layers);

  std::vector<SettingsWarning> warnings;
  for (const SettingsLayer* layer : layers)
    warnings.insert(warnings.end(), layer->warnings.begin(), layer->warnings.end());
  const Layers below_command_line{&environment, &config};
  note_megatron_override("cross entropy", settings.cross_entropy,
                         command_line.cross_entropy_from_megatron, below_command_line,
                         &SettingsLayer::cross_entropy, "--cross-entropy", warnings);
  note_megatron_override("norm", settings.norm, command_line.norm_from_megatron, below_command_line,
                         &SettingsLayer::norm, "--norm", warnings);

  // The level first, so that the warnings below are filtered by the level asked for.
  if (settings.log_level.source != Source::Default) set_log_level(settings.log_level.value);
  report(warnings);
  for (const SettingsWarning& warning : warnings) settings.warnings.push_back(warning.text);
  return settings;
}

}  // namespace switchyard
