// Reads the Switchyard config file into a settings layer.
#include "config_file.hpp"

#include "backend_names.hpp"
#include "did_you_mean.hpp"
#include "plugin_options.hpp"
#include "renamed_settings.hpp"
#include "setting_values.hpp"

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace switchyard::detail {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const std::string kPluginSectionPrefix = "plugin.";

// "cross_entropy.backend" -> "[cross_entropy] backend"; the section is everything before
// the last '.', since plugin sections ("plugin.fused") contain one themselves.
std::string ini_spelling(const std::string& key) {
  const auto dot = key.rfind('.');
  if (dot == std::string::npos) return key + " (outside any [section])";
  return "[" + key.substr(0, dot) + "] " + key.substr(dot + 1);
}

std::string after_last_dot(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

// The next step for "the file cannot be read", depending on who named it.
std::string how_to_stop_naming(const Setting& file) {
  switch (file.source) {
    case Source::Api:
      return "pass an existing file in RuntimeOptions::config_file";
    case Source::CommandLine:
      return "fix or drop " + file.origin;
    case Source::Environment:
      return "fix or unset " + file.origin;
    default:
      return "fix the path";
  }
}

std::string named_by(const Setting& file) {
  return "named by " + file.origin + " (" + source_name(file.source) + ")";
}

class ConfigReader {
 public:
  ConfigReader(const Setting& file, SettingsLayer& layer)
      : file_(file), folder_(fs::path(file.value).parent_path()), layer_(layer) {}

  void apply(const std::string& key, const std::string& spelled_key, const std::string& value) {
    const std::string origin = file_.value + " " + ini_spelling(spelled_key);
    const auto setting = [&](const std::string& v) {
      return make_setting(v, Source::ConfigFile, origin);
    };
    if (key == "cross_entropy.backend") {
      layer_.cross_entropy = setting(backend_value(value));
    } else if (key == "norm.backend") {
      layer_.norm = setting(backend_value(value));
    } else if (key == "norm.kind") {
      layer_.norm_kind = setting(canonical_norm_kind(value, origin));
    } else if (key == "plugins.path") {
      for (const std::string& path : split_list(value, ":"))
        layer_.plugin_path.push_back(setting(relative_to_file(path)));
    } else if (key == "plugins.system_path") {
      layer_.system_path = setting(relative_to_file(value));
    } else if (key == "plugins.disable") {
      for (const std::string& glob : split_list(value, ",:"))
        layer_.disable.push_back(setting(glob));
    } else if (key == "runtime.deterministic") {
      layer_.deterministic = setting(parse_boolean(value, origin));
    } else if (key == "runtime.log_level") {
      std::string problem;
      if (auto level = parse_log_level(value, origin, &problem))
        layer_.log_level = setting(*level);
      else
        layer_.warn(problem);
    }
  }

  void apply_plugin_option(const std::string& key, const std::string& value) {
    const std::string full = key.substr(kPluginSectionPrefix.size());
    std::string problem;
    if (!parse_plugin_option_name(full, &problem)) {
      layer_.warn(file_.value + ": " + ini_spelling(key) + " is ignored: " + problem +
                  "; plugin options go in a [plugin.<name>] section as <key> = <value>.");
      return;
    }
    layer_.plugin_options[full] =
        make_setting(value, Source::ConfigFile, file_.value + " " + ini_spelling(key));
  }

  void warn_unknown(const std::string& key) {
    std::vector<std::string> candidates;
    for (const std::string& known : known_config_keys()) candidates.push_back(known);
    std::string match = closest_match(key, candidates);
    if (match.empty() && key.find('.') == std::string::npos) {
      // "backend = liger" above any section: suggest the section that has this key.
      for (const std::string& known : known_config_keys()) {
        if (after_last_dot(known) == key) {
          match = known;
          break;
        }
      }
    }
    layer_.warn(file_.value + ": unknown key " + ini_spelling(key) + " is ignored" +
                (match.empty() ? std::string() : " (did you mean " + ini_spelling(match) + "?)") +
                ".");
  }

 private:
  std::string relative_to_file(const std::string& path) const {
    const fs::path p(path);
    if (p.is_absolute() || folder_.empty()) return path;
    return (folder_ / p).lexically_normal().string();
  }

  std::string backend_value(const std::string& value) const {
    return looks_like_path(value) ? relative_to_file(value) : value;
  }

  const Setting& file_;
  fs::path folder_;
  SettingsLayer& layer_;
};

}  // namespace

const std::vector<std::string>& known_config_keys() {
  static const std::vector<std::string> keys{
      "cross_entropy.backend", "norm.backend",        "norm.kind",
      "plugins.path",          "plugins.system_path", "plugins.disable",
      "runtime.deterministic", "runtime.log_level",
  };
  return keys;
}

SettingsLayer read_config_file(const Setting& file) {
  const std::string& path = file.value;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw_invalid_setting("The Switchyard config file '" + path + "' " + named_by(file) +
                          " is a folder, not a file; " + how_to_stop_naming(file) + ".");
  }
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    throw_invalid_setting("Cannot read the Switchyard config file '" + path + "' " +
                          named_by(file) + ": " + std::strerror(error) + "; " +
                          how_to_stop_naming(file) + ".");
  }

  po::options_description description("Switchyard config file");
  for (const std::string& key : known_config_keys())
    description.add_options()(key.c_str(), po::value<std::string>());
  po::parsed_options parsed(&description);
  try {
    // allow_unregistered: plugin options, renamed keys and typos come back as unregistered
    // options, which are handled (or warned about) below rather than failing the parse.
    parsed = po::parse_config_file(in, description, /*allow_unregistered=*/true);
  } catch (const po::error& e) {
    throw_invalid_setting("The Switchyard config file '" + path + "' " + named_by(file) +
                          " is not valid: " + e.what() +
                          ". Each line must be a [section], a 'key = value' or a '#' comment.");
  }

  // A renamed key is ignored when its new spelling appears anywhere in the same file.
  std::set<std::string> keys_present;
  for (const po::option& option : parsed.options) keys_present.insert(option.string_key);

  SettingsLayer layer;
  ConfigReader reader(file, layer);
  for (const po::option& option : parsed.options) {
    const std::string& key = option.string_key;
    const std::string value = option.value.empty() ? std::string() : trim(option.value.front());
    if (key.compare(0, kPluginSectionPrefix.size(), kPluginSectionPrefix) == 0) {
      if (!value.empty()) reader.apply_plugin_option(key, value);
      continue;
    }
    if (!option.unregistered) {
      if (!value.empty()) reader.apply(key, key, value);
      continue;
    }
    const std::string new_key = new_name_of(renamed_config_keys(), key);
    if (new_key.empty()) {
      reader.warn_unknown(key);
      continue;
    }
    std::string text = path + ": " + ini_spelling(key) + " is deprecated; use " +
                       ini_spelling(new_key) + " instead";
    const bool superseded = keys_present.count(new_key) > 0;
    text += superseded ? ". It is ignored because " + ini_spelling(new_key) + " is also set."
                       : " (its value is used for now).";
    layer.warnings.push_back({text, "deprecated config key " + key});
    if (!superseded && !value.empty()) reader.apply(new_key, key, value);
  }
  return layer;
}

}  // namespace switchyard::detail
