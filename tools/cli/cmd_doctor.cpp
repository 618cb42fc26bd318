// `switchyard doctor`: one report an operator can read top to bottom — resolved settings
// with their sources, the plugin folders and every plugin's status, CUDA, NCCL, the JIT
// cache, what each family resolves to, and a final verdict.
#include "commands.hpp"
#include "describe.hpp"
#include "output.hpp"
#include "system_probe.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace switchyard::cli {

namespace {

// ---- settings -------------------------------------------------------------------------------

std::vector<std::pair<std::string, const Setting*>> every_setting(const Settings& settings,
                                                                 const Setting& system_path) {
  std::vector<std::pair<std::string, const Setting*>> all = {
      {"cross_entropy", &settings.cross_entropy}, {"norm", &settings.norm},
      {"norm_kind", &settings.norm_kind},         {"deterministic", &settings.deterministic},
      {"log_level", &settings.log_level},         {"config_file", &settings.config_file},
  };
  for (size_t i = 0; i < settings.plugin_path.size(); ++i)
    all.emplace_back("plugin_path[" + std::to_string(i) + "]", &settings.plugin_path[i]);
  all.emplace_back("system_path", &system_path);
  for (size_t i = 0; i < settings.disable.size(); ++i)
    all.emplace_back("disable[" + std::to_string(i) + "]", &settings.disable[i]);
  for (const auto& [key, setting] : settings.plugin_options)
    all.emplace_back("option " + key, &setting);
  return all;
}

// ---- JIT cache ------------------------------------------------------------------------------

struct CacheReport {
  std::string path;      // empty when none can be determined
  std::string source;    // "plugin option fused.cache_dir (environment: ...)", ...
  bool disabled = false;
  std::string disabled_by;
  std::string state;     // "exists, writable", "will be created", ...
  bool problem = false;  // set but not usable
};

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

// The plugin that keeps a JIT kernel cache; the core maps SWITCHYARD_CACHE_DIR and
// SWITCHYARD_CACHE_DISABLE to the options "*.cache_dir" / "*.cache_disable" of every plugin.
constexpr const char* kCachePlugin = "fused";

// The option `key` as the cache plugin will see it: its own "<plugin>.<key>" or the
// wildcard "*.<key>", whichever has the higher-precedence source (its own on a tie) — the
// core's lookup rule for sy_host.option.
std::optional<std::pair<std::string, Setting>> cache_option(const Settings& settings,
                                                            const std::string& key) {
  const std::string specific_key = std::string(kCachePlugin) + "." + key, wildcard_key = "*." + key;
  const auto specific = settings.plugin_options.find(specific_key);
  const auto wildcard = settings.plugin_options.find(wildcard_key);
  const bool has_specific = specific != settings.plugin_options.end();
  const bool has_wildcard = wildcard != settings.plugin_options.end();
  if (has_wildcard && (!has_specific || wildcard->second.source < specific->second.source))
    return *wildcard;
  if (has_specific) return *specific;
  return std::nullopt;
}

std::string origin_text(const std::string& key, const Setting& setting) {
  std::string where = source_name(setting.source);
  if (!setting.origin.empty()) where += ": " + setting.origin;
  if (setting.source == Source::Environment) return where;  // the variable says it all
  return "plugin option " + key + " (" + where + ")";
}

bool truthy(const std::string& value) {
  return !value.empty() && value != "0" && value != "false" && value != "off" && value != "no";
}

CacheReport locate_cache(const Settings& settings) {
  CacheReport cache;
  if (auto option = cache_option(settings, "cache_dir")) {
    cache.path = option->second.value;
    cache.source = origin_text(option->first, option->second);
  } else if (auto dir = environment("SWITCHYARD_CACHE_DIR")) {
    cache.path = *dir;
    cache.source = "environment: SWITCHYARD_CACHE_DIR";
  } else if (auto xdg = environment("XDG_CACHE_HOME")) {
    cache.path = (fs::path(*xdg) / "switchyard").string();
    cache.source = "default: $XDG_CACHE_HOME/switchyard";
  } else if (auto home = environment("HOME")) {
    cache.path = (fs::path(*home) / ".cache" / "switchyard").string();
    cache.source = "default: ~/.cache/switchyard";
  } else {
    cache.source = "default";
    cache.state = "no location: none of SWITCHYARD_CACHE_DIR, XDG_CACHE_HOME, HOME is set; "
                  "kernels are compiled again in every process";
  }
  if (auto disable = cache_option(settings, "cache_disable")) {
    if (truthy(disable->second.value)) {
      cache.disabled = true;
      cache.disabled_by = origin_text(disable->first, disable->second) + " = " + disable->second.value;
    }
  } else if (auto variable = environment("SWITCHYARD_CACHE_DISABLE"); variable && truthy(*variable)) {
    cache.disabled = true;
    cache.disabled_by = "environment: SWITCHYARD_CACHE_DISABLE = " + *variable;
  }
  if (cache.path.empty()) return cache;
  std::error_code error;
  if (fs::is_directory(cache.path, error)) {
    const bool writable = ::access(cache.path.c_str(), W_OK | X_OK) == 0;
    cache.state = writable ? "exists, writable" : "exists, NOT writable by this user";
    cache.problem = !writable;
  } else if (fs::exists(cache.path, error)) {
    cache.state = "exists but is not a folder";
    cache.problem = true;
  } else {
    // The plugin creates it on first use; say whether it will be able to.
    fs::path parent = fs::path(cache.path).parent_path();
    while (!parent.empty() && !fs::exists(parent, error) && parent != parent.root_path())
      parent = parent.parent_path();
    if (!parent.empty() && !fs::is_directory(parent, error)) {
      cache.state = "does not exist and cannot be created (" + parent.string() + " is not a folder)";
      cache.problem = true;
    } else {
      const bool creatable = !parent.empty() && ::access(parent.c_str(), W_OK | X_OK) == 0;
      cache.state = creatable ? "does not exist yet, will be created on first use"
                              : "does not exist and cannot be created (" + parent.string() +
                                    " is not writable)";
      cache.problem = !creatable;
    }
  }
  if (cache.disabled) cache.problem = false;  // an unusable folder nobody will use is no problem
  return cache;
}

// ---- selection ------------------------------------------------------------------------------

struct FamilyOutcome {
  Family family;
  std::optional<Selection> selection;
  std::string error;  // the runtime's full message when selection failed
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string size_text(int64_t bytes) {
  std::ostringstream text;
  text.precision(1);
  text << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return text.str();
}

}  // namespace

int cmd_doctor(const Args& args) {
  po::options_description own("doctor options");
  own.add_options()("probe-timeout", po::value<int>()->default_value(30),
                    "seconds the CUDA/NCCL probe may take before it is killed");
  po::variables_map vm;
  RuntimeOptions options;
  if (!parse_command_line("doctor", args, own, vm, options)) return 2;
  if (vm.count("help")) {
    std::cout << "Checks this machine: resolved settings with their sources, the plugin folders\n"
                 "and each plugin's status, whether CUDA and NCCL are usable, the JIT cache, what\n"
                 "each family resolves to, and a verdict. Exit status 1 when a family cannot be\n"
                 "served or the cache is unusable.\n\n";
    print_command_help(std::cout, "doctor", "[options]", own);
    return 0;
  }
  const bool json_output = vm.count("json") > 0;
  const int timeout = vm["probe-timeout"].as<int>();
  if (timeout <= 0)
    return report_error("doctor", "--probe-timeout must be a positive number of seconds, got " +
                                      std::to_string(timeout),
                        2);

  // Order matters: children are forked (plugin discovery, the system probe) before anything
  // in this process may initialise CUDA, which selection can do by loading a plugin.
  const Runtime runtime(options);
  const Settings& settings = runtime.settings();
  Progress progress("doctor", 4, json_output);
  progress.update(0, "loading plugins");
  const std::vector<SearchLocation> locations = runtime.discover(true);
  progress.update(1, "probing CUDA and NCCL");
  const SystemReport system = probe_system(timeout);
  progress.update(2, "checking the JIT cache");
  const CacheReport cache = locate_cache(settings);
  progress.update(3, "selecting backends");
  std::vector<FamilyOutcome> outcomes;
  for (Family family : {Family::CrossEntropy, Family::Norm}) {
    FamilyOutcome outcome{family, std::nullopt, ""};
    try {
      outcome.selection = runtime.select(family);
    } catch (const std::exception& e) {
      outcome.error = e.what();
    }
    outcomes.push_back(std::move(outcome));
  }
  progress.finish();

  // The core leaves Settings::system_path empty while it is the built-in default and
  // resolves the folder (next to libswitchyard) during discovery; show that folder.
  Setting system_path = settings.system_path;
  if (system_path.value.empty())
    for (const auto& location : locations)
      if (location.origin.source == Source::Default) system_path.value = location.path;

  // ---- verdict ----
  std::vector<std::string> problems, warnings;
  for (const auto& outcome : outcomes)
    if (!outcome.selection)
      problems.push_back(std::string(family_name(outcome.family)) + " cannot be served: " +
                         first_line(outcome.error));
  if (cache.problem) problems.push_back("JIT cache " + cache.path + ": " + cache.state);
  size_t total = 0, runnable = 0;
  for (const auto& location : locations) {
    for (const auto& plugin : location.candidates) {
      ++total;
      if (plugin.state == PluginState::Ok) ++runnable;
      if (plugin.state == PluginState::Rejected || plugin.state == PluginState::Crashed)
        warnings.push_back(plugin.path + " " + plugin_state_name(plugin.state) + ": " +
                           first_line(plugin.reason));
    }
  }
  for (const auto& warning : settings.warnings) warnings.push_back(warning);
  for (const auto& outcome : outcomes)
    if (outcome.selection)
      for (const auto& note : outcome.selection->notes)
        warnings.push_back(std::string(family_name(outcome.family)) + ": " + note);
  const std::string verdict = !problems.empty() ? "problems" : !warnings.empty() ? "ok with warnings" : "ok";
  const int exit_code = problems.empty() ? 0 : 1;

  if (json_output) {
    Json json = Json::object();
    json.set("version", version());
    Json abi = Json::object();
    abi.set("major", SY_ABI_MAJOR).set("minor", SY_ABI_MINOR);
    json.set("abi", std::move(abi));
    Json settings_json = Json::object();
    for (const auto& [name, setting] : every_setting(settings, system_path))
      settings_json.set(name, setting_json(*setting));
    json.set("settings", std::move(settings_json));
    json.set("search_path", search_path_json(locations));

    Json devices = Json::array();
    for (const auto& device : system.cuda.devices) {
      Json entry = Json::object();
      entry.set("index", device.index)
          .set("name", device.name)
          .set("compute_capability", device.compute_capability)
          .set("memory_bytes", device.memory_bytes);
      devices.push(std::move(entry));
    }
    Json cuda = Json::object();
    cuda.set("usable", system.cuda.usable)
        .set("reason", system.cuda.reason)
        .set("driver_library", system.cuda.driver_library)
        .set("driver_version", system.cuda.driver_version)
        .set("device_count", static_cast<int64_t>(system.cuda.devices.size()))
        .set("devices", std::move(devices))
        .set("runtime_library", system.cuda.runtime_library)
        .set("runtime_version", system.cuda.runtime_version)
        .set("runtime_reason", system.cuda.runtime_reason);
    json.set("cuda", std::move(cuda));
    Json nccl = Json::object();
    nccl.set("usable", system.nccl.usable)
        .set("library", system.nccl.library)
        .set("version", system.nccl.version)
        .set("reason", system.nccl.reason);
    json.set("nccl", std::move(nccl));
    Json cache_json = Json::object();
    cache_json.set("path", cache.path)
        .set("source", cache.source)
        .set("state", cache.state)
        .set("disabled", cache.disabled)
        .set("disabled_by", cache.disabled_by)
        .set("usable", !cache.problem);
    json.set("cache", std::move(cache_json));
    Json selection = Json::object();
    for (const auto& outcome : outcomes) {
      Json entry = Json::object();
      if (outcome.selection) {
        entry.set("requested", setting_json(outcome.selection->requested))
            .set("resolved", outcome.selection->resolved_name)
            .set("path", outcome.selection->plugin.path)
            .set("version", outcome.selection->plugin.version);
      } else {
        entry.set("error", outcome.error);
      }
      selection.set(family_name(outcome.family), std::move(entry));
    }
    json.set("selection", std::move(selection));
    Json problems_json = Json::array(), warnings_json = Json::array();
    for (const auto& problem : problems) problems_json.push(problem);
    for (const auto& warning : warnings) warnings_json.push(warning);
    json.set("problems", std::move(problems_json))
        .set("warnings", std::move(warnings_json))
        .set("verdict", verdict);
    std::cout << json.dump() << '\n';
    return exit_code;
  }

  std::ostream& out = std::cout;
  out << "switchyard " << version() << " (plugin ABI " << SY_ABI_MAJOR << '.' << SY_ABI_MINOR
      << ")\n\n";

  out << "Settings (value and where it came from)\n";
  std::vector<std::pair<std::string, std::string>> setting_fields;
  for (const auto& [name, setting] : every_setting(settings, system_path))
    setting_fields.emplace_back(name, setting->describe() +
                                          (setting->fallback.empty()
                                               ? ""
                                               : ", falls back to " + setting->fallback));
  print_fields(out, setting_fields, "  ");

  out << "\nPlugins (search path in order)\n";
  std::ostringstream plugins;
  print_search_path(plugins, locations);
  std::istringstream plugin_lines(plugins.str());
  for (std::string line; std::getline(plugin_lines, line);)
    out << (line.empty() ? "" : "  ") << line << '\n';

  out << "\nCUDA\n";
  std::vector<std::pair<std::string, std::string>> cuda_fields;
  cuda_fields.emplace_back("usable", system.cuda.usable ? "yes" : "no: " + system.cuda.reason);
  cuda_fields.emplace_back("driver", system.cuda.driver_library +
                                         (system.cuda.driver_version.empty()
                                              ? ""
                                              : ", CUDA " + system.cuda.driver_version));
  if (system.cuda.usable) {
    cuda_fields.emplace_back("devices", std::to_string(system.cuda.devices.size()));
    for (const auto& device : system.cuda.devices) {
      std::string text = device.name;
      if (!device.compute_capability.empty()) text += ", sm " + device.compute_capability;
      if (device.memory_bytes > 0) text += ", " + size_text(device.memory_bytes);
      cuda_fields.emplace_back("  " + std::to_string(device.index), text);
    }
  }
  cuda_fields.emplace_back("runtime", system.cuda.runtime_found
                                          ? system.cuda.runtime_library + ", CUDA " +
                                                system.cuda.runtime_version
                                          : "not usable: " + system.cuda.runtime_reason);
  print_fields(out, cuda_fields, "  ");

  out << "\nNCCL\n";
  print_fields(out,
               {{"usable", system.nccl.usable ? "yes" : "no: " + system.nccl.reason},
                {"library", system.nccl.library +
                                (system.nccl.version.empty() ? "" : ", version " + system.nccl.version)}},
               "  ");

  out << "\nJIT cache\n";
  std::vector<std::pair<std::string, std::string>> cache_fields = {
      {"location", cache.path.empty() ? "(none)" : cache.path},
      {"from", cache.source},
      {"state", cache.state},
  };
  if (cache.disabled) cache_fields.emplace_back("disabled", "yes (" + cache.disabled_by + ")");
  print_fields(out, cache_fields, "  ");

  out << "\nSelection\n";
  std::vector<std::pair<std::string, std::string>> selection_fields;
  for (const auto& outcome : outcomes) {
    std::string text;
    if (outcome.selection) {
      const Selection& selection = *outcome.selection;
      text = selection.resolved_name + " " + selection.plugin.version + " (" +
             selection.plugin.path + "), requested " + selection.requested.describe();
    } else {
      text = "FAILED: " + outcome.error;
    }
    selection_fields.emplace_back(family_name(outcome.family), text);
  }
  print_fields(out, selection_fields, "  ");

  out << '\n' << total << (total == 1 ? " plugin" : " plugins") << " found, " << runnable
      << " can run here.\n";
  for (const auto& problem : problems) out << "problem: " << problem << '\n';
  for (const auto& warning : warnings) out << "warning: " << warning << '\n';
  out << "verdict: " << verdict;
  if (problems.empty()) {
    out << " — ";
    std::string chosen;
    for (const auto& outcome : outcomes)
      chosen += (chosen.empty() ? "" : ", ") + std::string(family_name(outcome.family)) + " -> " +
                outcome.selection->resolved_name;
    out << chosen;
  } else {
    out << " — " << problems.size() << (problems.size() == 1 ? " problem" : " problems")
        << " above; fix them or choose another backend (see 'switchyard select')";
  }
  out << '\n';
  if (!problems.empty()) {
    std::cerr << "switchyard doctor: " << problems.size()
              << (problems.size() == 1 ? " problem" : " problems") << " found:\n";
    for (const auto& problem : problems) std::cerr << "  " << problem << '\n';
  }
  return exit_code;
}

}  // namespace switchyard::cli
