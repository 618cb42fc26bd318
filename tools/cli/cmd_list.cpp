// `switchyard list`: every location of the search path, and each candidate found there with
// its state, families, devices, determinism and the reason it cannot be used.
#include "commands.hpp"
#include "describe.hpp"
#include "output.hpp"

#include <iostream>
#include <map>

namespace po = boost::program_options;

namespace switchyard::cli {

int cmd_list(const Args& args) {
  po::options_description own("list options");
  own.add_options()("names-only", "list files without loading them (no child processes)");
  po::variables_map vm;
  RuntimeOptions options;
  if (!parse_command_line("list", args, own, vm, options)) return 2;
  if (vm.count("help")) {
    std::cout << "Lists every folder and file of the plugin search path, in search order, with\n"
                 "the setting that put it there, and each candidate found: name, version,\n"
                 "state (ok, unavailable, rejected, crashed, disabled), families, devices,\n"
                 "determinism and why it cannot be used. Plugins are loaded and probed in\n"
                 "child processes, so one that crashes is reported, not fatal.\n\n";
    print_command_help(std::cout, "list", "[options]", own);
    return 0;
  }

  const Runtime runtime(options);
  const bool load = vm.count("names-only") == 0;
  Progress progress("list", 0, vm.count("json") > 0 || !load);
  progress.update(0, "loading plugins in child processes");
  const std::vector<SearchLocation> locations = runtime.discover(load);
  progress.finish();

  std::map<std::string, int> counts;  // state -> number of candidates
  size_t total = 0;
  for (const auto& location : locations) {
    for (const auto& plugin : location.candidates) {
      ++counts[plugin_state_name(plugin.state)];
      ++total;
    }
  }

  if (vm.count("json")) {
    Json summary = Json::object();
    summary.set("plugins", static_cast<int64_t>(total));
    for (const auto& [state, count] : counts) summary.set(state, count);
    Json json = Json::object();
    json.set("loaded", load)
        .set("search_path", search_path_json(locations))
        .set("summary", std::move(summary))
        .set("warnings", [&] {
          Json warnings = Json::array();
          for (const auto& warning : runtime.settings().warnings) warnings.push(warning);
          return warnings;
        }());
    std::cout << json.dump() << '\n';
    return 0;
  }

  if (!load) std::cout << "(file names only: plugins were not loaded)\n\n";
  print_search_path(std::cout, locations, load);
  std::cout << '\n' << total << (total == 1 ? " plugin" : " plugins");
  if (total > 0 && load) {
    std::string parts;
    for (const auto& [state, count] : counts)
      parts += (parts.empty() ? "" : ", ") + std::to_string(count) + " " + state;
    std::cout << ": " << parts;
  }
  std::cout << '\n';
  return 0;
}

}  // namespace switchyard::cli
