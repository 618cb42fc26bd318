// Reads the SWITCHYARD_* environment variables into a settings layer.
#include "environment.hpp"

#include "did_you_mean.hpp"
#include "plugin_options.hpp"
#include "renamed_settings.hpp"
#include "setting_values.hpp"

#include <optional>

extern char** environ;  // POSIX; not declared by <unistd.h> without _GNU_SOURCE everywhere

namespace switchyard::detail {
namespace {

const std::string kPrefix = "SWITCHYARD_";
const std::string kOptionPrefix = "SWITCHYARD_OPTION_";

// Read by Switchyard's own build and test scripts (packaging/*.sh), not by the library: a
// user who exports them must not get a warning from every program that loads the core.
constexpr const char* kToolingVariables[] = {"SWITCHYARD_BUILD_DIR", "SWITCHYARD_JOBS"};

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

struct Found {
  std::string value;
  std::string name;  // the variable that gave it: the current name or a renamed one
};

class EnvironmentReader {
 public:
  EnvironmentReader(const Environment& environment, SettingsLayer& layer)
      : environment_(environment), layer_(layer) {}

  // The value of `name` (trimmed), else of a variable renamed to it; nullopt when unset.
  std::optional<Found> get(const std::string& name) {
    std::optional<Found> found = value_of(name);
    for (const Rename& rename : renamed_environment_variables()) {
      if (rename.new_name != name) continue;
      const std::optional<Found> old = value_of(rename.old_name);
      if (!old) continue;
      std::string text = rename.old_name + " is deprecated; use " + name + " instead";
      if (found) {
        text += ". It is ignored because " + name + " is also set.";
      } else {
        text += " (its value is used for now).";
        found = old;
      }
      layer_.warnings.push_back({text, "deprecated environment variable " + rename.old_name});
    }
    return found;
  }

 private:
  std::optional<Found> value_of(const std::string& name) const {
    const auto it = environment_.find(name);
    if (it == environment_.end()) return std::nullopt;
    std::string value = trim(it->second);
    if (value.empty()) return std::nullopt;
    return Found{value, name};
  }

  const Environment& environment_;
  SettingsLayer& layer_;
};

Setting env_setting(const std::string& value, const Found& found) {
  return make_setting(value, Source::Environment, found.name);
}

// SWITCHYARD_OPTION_<PLUGIN>__<KEY>=value -> plugin option "<plugin>.<key>".
void read_generic_option(const std::string& name, const std::string& raw_value,
                         SettingsLayer& layer) {
  const std::string rest = name.substr(kOptionPrefix.size());
  const auto separator = rest.find("__");
  const std::string form =
      ". The form is SWITCHYARD_OPTION_<PLUGIN>__<KEY>, with two underscores between plugin "
      "and key, e.g. SWITCHYARD_OPTION_FUSED__CACHE_DIR.";
  if (separator == std::string::npos) {
    layer.warn(name + " is ignored: it has no '__' between plugin and key" + form);
    return;
  }
  const std::string full =
      to_lower(rest.substr(0, separator)) + "." + to_lower(rest.substr(separator + 2));
  std::string problem;
  if (!parse_plugin_option_name(full, &problem) || full[0] == '*') {
    layer.warn(name + " is ignored: " + (problem.empty() ? "no plugin name" : problem) + form);
    return;
  }
  const std::string value = trim(raw_value);
  if (value.empty()) return;
  layer.plugin_options[full] = make_setting(value, Source::Environment, name);
}

// Names that look like ours but are not read.
void warn_about_unknown(const Environment& environment, SettingsLayer& layer) {
  std::vector<std::string> known_suffixes;
  for (const std::string& known : known_environment_variables())
    known_suffixes.push_back(known.substr(kPrefix.size()));

  for (const auto& entry : environment) {
    const std::string& name = entry.first;
    if (!starts_with(to_upper(name), kPrefix)) continue;
    if (!starts_with(name, kPrefix)) {
      // switchyard_norm, Switchyard_Norm: variable names are case-sensitive.
      layer.warn(name +
                 " is not read: Switchyard's environment variables are upper case (did you "
                 "mean '" +
                 to_upper(name) + "'?).");
      continue;
    }
    if (starts_with(name, kOptionPrefix)) continue;  // read_generic_option's business
    const std::string suffix = name.substr(kPrefix.size());
    bool known = false;
    for (const std::string& k : known_environment_variables()) known = known || k == name;
    for (const char* tooling : kToolingVariables) known = known || name == tooling;
    known = known || !new_name_of(renamed_environment_variables(), name).empty();
    if (known) continue;
    // Compared without the common prefix, which would make every name look close.
    const std::string match = closest_match(suffix, known_suffixes);
    if (!match.empty()) {
      layer.warn(name + " is not a Switchyard variable and is ignored (did you mean '" + kPrefix +
                 match + "'?).");
      continue;
    }
    std::string known_list;
    for (const std::string& k : known_environment_variables()) known_list += k + ", ";
    layer.warn(name + " is not a Switchyard variable and is ignored. Switchyard reads " +
               known_list + "and SWITCHYARD_OPTION_<PLUGIN>__<KEY>.");
  }
}

}  // namespace

Environment process_environment() {
  Environment environment;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string text(*entry);
    const auto equals = text.find('=');
    if (equals == std::string::npos) continue;
    environment.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return environment;
}

const std::vector<std::string>& known_environment_variables() {
  static const std::vector<std::string> names{
      "SWITCHYARD_PLUGIN_PATH",   "SWITCHYARD_PLUGIN_SYSTEM_PATH", "SWITCHYARD_CROSS_ENTROPY",
      "SWITCHYARD_NORM",          "SWITCHYARD_NORM_KIND",          "SWITCHYARD_CONFIG",
      "SWITCHYARD_DETERMINISTIC", "SWITCHYARD_LOG_LEVEL",          "SWITCHYARD_DISABLE",
      "SWITCHYARD_CACHE_DIR",     "SWITCHYARD_CACHE_DISABLE",
  };
  return names;
}

SettingsLayer read_environment(const Environment& environment) {
  SettingsLayer layer;
  EnvironmentReader env(environment, layer);

  if (auto found = env.get("SWITCHYARD_CROSS_ENTROPY"))
    layer.cross_entropy = env_setting(found->value, *found);
  if (auto found = env.get("SWITCHYARD_NORM")) layer.norm = env_setting(found->value, *found);
  if (auto found = env.get("SWITCHYARD_NORM_KIND"))
    layer.norm_kind = env_setting(canonical_norm_kind(found->value, found->name), *found);
  if (auto found = env.get("SWITCHYARD_CONFIG"))
    layer.config_file = env_setting(found->value, *found);
  if (auto found = env.get("SWITCHYARD_DETERMINISTIC"))
    layer.deterministic = env_setting(parse_boolean(found->value, found->name), *found);
  if (auto found = env.get("SWITCHYARD_LOG_LEVEL")) {
    std::string problem;
    if (auto level = parse_log_level(found->value, found->name, &problem))
      layer.log_level = env_setting(*level, *found);
    else
      layer.warn(problem);
  }
  if (auto found = env.get("SWITCHYARD_PLUGIN_SYSTEM_PATH"))
    layer.system_path = env_setting(found->value, *found);
  if (auto found = env.get("SWITCHYARD_PLUGIN_PATH")) {
    for (const std::string& path : split_list(found->value, ":"))
      layer.plugin_path.push_back(env_setting(path, *found));
  }
  if (auto found = env.get("SWITCHYARD_DISABLE")) {
    for (const std::string& glob : split_list(found->value, ",:"))
      layer.disable.push_back(env_setting(glob, *found));
  }
  // The JIT cache variables are options of whichever plugin keeps a cache (fused today).
  if (auto found = env.get("SWITCHYARD_CACHE_DIR"))
    layer.plugin_options["*.cache_dir"] = env_setting(found->value, *found);
  if (auto found = env.get("SWITCHYARD_CACHE_DISABLE"))
    layer.plugin_options["*.cache_disable"] =
        env_setting(parse_boolean(found->value, found->name), *found);

  for (const auto& [name, value] : environment) {
    if (starts_with(name, kOptionPrefix)) read_generic_option(name, value, layer);
  }
  warn_about_unknown(environment, layer);
  return layer;
}

}  // namespace switchyard::detail
