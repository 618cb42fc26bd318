// `switchyard cache list|clear`: the fused plugin's on-disk JIT kernel cache. The location
// and the entry format come from the plugin's own header (plugins/fused/jit/cache_format.hpp),
// and the options from the resolved settings with the core's rule for sy_host.option, so the
// command sees exactly the folder the plugin uses.
#include "commands.hpp"
#include "output.hpp"

#include "fused/jit/cache_format.hpp"

#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>

namespace po = boost::program_options;

namespace switchyard::cli {
namespace {

namespace cache = fused::jit::cache;

constexpr const char* kPlugin = "fused";

// The plugin's option `key` as sy_host.option resolves it: "fused.<key>" or "*.<key>",
// whichever comes from the higher-precedence source, the specific one on a tie.
std::optional<std::pair<std::string, Setting>> plugin_option(const Settings& settings,
                                                             const std::string& key) {
  const auto specific = settings.plugin_options.find(std::string(kPlugin) + "." + key);
  const auto wildcard = settings.plugin_options.find("*." + key);
  const bool has_specific = specific != settings.plugin_options.end();
  const bool has_wildcard = wildcard != settings.plugin_options.end();
  if (has_wildcard && (!has_specific || wildcard->second.source < specific->second.source))
    return *wildcard;
  if (has_specific) return *specific;
  return std::nullopt;
}

const char* value_or_null(const std::optional<std::pair<std::string, Setting>>& option) {
  return option ? option->second.value.c_str() : nullptr;
}

std::string origin_of(const std::pair<std::string, Setting>& option) {
  std::string where = source_name(option.second.source);
  if (!option.second.origin.empty()) where += ": " + option.second.origin;
  return "plugin option " + option.first + " (" + where + ")";
}

std::string human_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  if (unit == 0) std::snprintf(buffer, sizeof buffer, "%lld B", static_cast<long long>(bytes));
  else std::snprintf(buffer, sizeof buffer, "%.1f %s", value, units[unit]);
  return buffer;
}

std::string time_text(int64_t ns, bool utc_iso) {
  const std::time_t seconds = static_cast<std::time_t>(ns / 1000000000);
  std::tm parts{};
  if (utc_iso) gmtime_r(&seconds, &parts);
  else localtime_r(&seconds, &parts);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, utc_iso ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M:%S", &parts);
  return buffer;
}

struct ResolvedCache {
  cache::Location location;
  std::string origin;        // where the folder comes from
  std::string disabled_by;   // the option that disables it, when it does
  std::string max_bytes_by;  // the option that sets the cap, or "default"
};

ResolvedCache resolve(const Settings& settings) {
  const auto dir = plugin_option(settings, cache::kOptionDir);
  const auto disable = plugin_option(settings, cache::kOptionDisable);
  const auto max_bytes = plugin_option(settings, cache::kOptionMaxBytes);
  ResolvedCache resolved;
  resolved.location =
      cache::resolve_location(value_or_null(dir), value_or_null(disable), value_or_null(max_bytes));
  resolved.origin = dir ? origin_of(*dir) : "default: " + resolved.location.origin;
  if (resolved.location.disabled && disable)
    resolved.disabled_by = origin_of(*disable) + " = " + disable->second.value;
  resolved.max_bytes_by = max_bytes ? origin_of(*max_bytes) : "default";
  return resolved;
}

Json location_json(const ResolvedCache& resolved) {
  Json json = Json::object();
  json.set("folder", resolved.location.folder)
      .set("root", resolved.location.root)
      .set("origin", resolved.origin)
      .set("disabled", resolved.location.disabled)
      .set("max_bytes", resolved.location.max_bytes);
  if (!resolved.disabled_by.empty()) json.set("disabled_by", resolved.disabled_by);
  if (!resolved.location.problem.empty()) json.set("problem", resolved.location.problem);
  return json;
}

int list(const ResolvedCache& resolved, bool as_json) {
  const cache::Location& where = resolved.location;
  const std::vector<cache::ListedEntry> entries = cache::list_entries(where.folder, /*verify=*/true);
  int64_t total = 0;
  for (const auto& entry : entries) total += entry.size_bytes;

  if (as_json) {
    Json json = location_json(resolved);
    json.set("total_bytes", total);
    Json items = Json::array();
    for (const auto& entry : entries) {
      Json item = Json::object();
      item.set("key", entry.file_name.substr(0, 32))
          .set("file", entry.path)
          .set("size_bytes", entry.size_bytes)
          .set("last_use", time_text(entry.last_use_ns, true))
          .set("last_use_unix_ms", entry.last_use_ns / 1000000)
          .set("valid", entry.info.has_value());
      if (entry.info) {
        const cache::EntryInfo& info = *entry.info;
        item.set("arch", "sm_" + std::to_string(info.arch))
            .set("kind", cache::payload_kind_name(info.kind))
            .set("nvrtc", cache::version_text(info.nvrtc_version))
            .set("driver", cache::version_text(info.driver_version))
            .set("created", time_text(static_cast<int64_t>(info.created_unix_ms) * 1000000, true))
            .set("compile_us", static_cast<int64_t>(info.compile_us))
            .set("specialises", info.description);
      } else {
        item.set("error", entry.error);
      }
      items.push(std::move(item));
    }
    json.set("entries", std::move(items));
    std::cout << json.dump() << '\n';
    return 0;
  }

  std::cout << "cache     " << where.folder << '\n'
            << "location  " << resolved.origin << '\n'
            << "state     "
            << (where.disabled ? "disabled by " + resolved.disabled_by
                               : std::string("enabled (plugin option cache_disable unset or 0)"))
            << '\n'
            << "size      " << entries.size() << (entries.size() == 1 ? " entry, " : " entries, ")
            << human_bytes(total) << " of " << human_bytes(where.max_bytes)
            << " (cache_max_bytes, " << resolved.max_bytes_by << ")\n";
  if (!where.problem.empty()) std::cout << "problem   " << where.problem << '\n';
  std::cout << '\n';
  if (entries.empty()) {
    std::cout << "no entries (the fused plugin stores a kernel here the first time it compiles "
                 "one)\n";
    return 0;
  }
  Table table({"key", "arch", "kind", "size", "last use", "compiled in", "specialises"});
  for (const auto& entry : entries) {
    const std::string key = entry.file_name.substr(0, 32);
    if (entry.info) {
      const cache::EntryInfo& info = *entry.info;
      char compile[32];
      std::snprintf(compile, sizeof compile, "%.0f ms", static_cast<double>(info.compile_us) / 1000.0);
      table.add({key, "sm_" + std::to_string(info.arch), cache::payload_kind_name(info.kind),
                 human_bytes(entry.size_bytes), time_text(entry.last_use_ns, false), compile,
                 info.description});
    } else {
      table.add({key, "-", "-", human_bytes(entry.size_bytes), time_text(entry.last_use_ns, false),
                 "-", "CORRUPT: " + entry.error + " (the plugin deletes it on next use)"});
    }
  }
  table.print(std::cout);
  return 0;
}

int clear(const ResolvedCache& resolved, bool as_json) {
  const cache::ClearResult result = cache::clear_folder(resolved.location.folder);
  if (as_json) {
    Json json = location_json(resolved);
    Json errors = Json::array();
    for (const auto& error : result.errors) errors.push(error);
    json.set("removed_entries", result.entries)
        .set("removed_bytes", result.bytes)
        .set("removed_temporary", result.temporary)
        .set("errors", std::move(errors));
    std::cout << json.dump() << '\n';
  } else {
    std::cout << "removed " << result.entries << (result.entries == 1 ? " entry" : " entries")
              << " (" << human_bytes(result.bytes) << ")";
    if (result.temporary > 0) std::cout << " and " << result.temporary << " temporary file(s)";
    std::cout << " from " << resolved.location.folder << '\n';
  }
  for (const auto& error : result.errors)
    report_error("cache", "could not remove " + error);
  return result.errors.empty() ? 0 : 1;
}

}  // namespace

int cmd_cache(const Args& args) {
  po::options_description own("cache options");
  own.add_options()("action", po::value<std::string>(), "list or clear");
  po::positional_options_description positional;
  positional.add("action", 1);
  po::variables_map vm;
  RuntimeOptions options;
  if (!parse_command_line("cache", args, own, vm, options, &positional)) return 2;
  if (vm.count("help")) {
    std::cout << "The fused plugin's on-disk cache of JIT-compiled kernels.\n"
                 "  list   every entry: key, GPU architecture, size, last use, compile time\n"
                 "         and what it specialises; corrupt entries are marked\n"
                 "  clear  removes every entry (and leftover temporary files), nothing else\n"
                 "The folder is <root>/fused, <root> being the plugin option cache_dir\n"
                 "(SWITCHYARD_CACHE_DIR, --plugin-option fused.cache_dir=..., [plugin.fused] in a\n"
                 "config file), else $XDG_CACHE_HOME/switchyard, else ~/.cache/switchyard.\n\n";
    print_command_help(std::cout, "cache", "list|clear [options]", own);
    return 0;
  }
  const std::vector<std::string> actions = {"list", "clear"};
  if (!vm.count("action"))
    return report_error("cache", "missing the action: 'switchyard cache list' or 'switchyard cache clear'", 2);
  const std::string action = vm["action"].as<std::string>();
  if (action != "list" && action != "clear")
    return report_error("cache", "unknown action '" + action + "'" + did_you_mean(action, actions) +
                                     "; the actions are list and clear",
                        2);

  const Runtime runtime(options);
  const ResolvedCache resolved = resolve(runtime.settings());
  if (resolved.location.folder.empty())
    return report_error("cache",
                        "no cache location: none of the plugin option cache_dir "
                        "(SWITCHYARD_CACHE_DIR), XDG_CACHE_HOME and HOME is set");
  const bool as_json = vm.count("json") > 0;
  return action == "list" ? list(resolved, as_json) : clear(resolved, as_json);
}

}  // namespace switchyard::cli
