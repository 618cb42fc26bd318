// The start of a GPU check's main() that takes one plugin (ce_paths_check, norm_paths_check):
// its one option, the plugin's description, and the lines it prints when it cannot go on.
#ifndef SWITCHYARD_TESTS_GPU_PLUGIN_CHECK_START_HPP
#define SWITCHYARD_TESTS_GPU_PLUGIN_CHECK_START_HPP

#include <switchyard/switchyard.hpp>

#include <cuda_runtime_api.h>

#include <exception>
#include <iostream>
#include <optional>
#include <string>

namespace gpu_test {

// The exit status of a check where no GPU is usable (CTest's SKIP_RETURN_CODE).
constexpr int kSkipped = 77;

struct PluginCheckStart {
  switchyard::PluginInfo info;  // the plugin, loadable
  std::string prefix;           // "<check>-<plugin>/", before each case's name
  std::optional<int> exit_status;  // set: main() returns it at once (its lines are printed)
};

// Reads `[--plugin NAME]` (default te) and inspects the plugin, before CUDA is initialised in
// this process (inspecting runs the plugin in a child process). Exit statuses: 2 for a bad
// command line (usage on stderr), kSkipped without a usable CUDA device, 1 when the plugin does
// not load (a FAIL line naming why). `check` names the check in its lines ("ce-paths").
inline PluginCheckStart start_plugin_check(int argc, char** argv, const std::string& program,
                                           const std::string& check) {
  PluginCheckStart start;
  std::string plugin = "te";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--plugin" && i + 1 < argc) {
      plugin = argv[++i];
    } else {
      std::cerr << program << ": unexpected argument '" << arg << "'\nusage: " << program
                << " [--plugin NAME]\n";
      start.exit_status = 2;
      return start;
    }
  }
  start.prefix = check + "-" + plugin + "/";
  std::string inspect_error;
  try {
    start.info = switchyard::Runtime().inspect(plugin);
    if (start.info.state != switchyard::PluginState::Ok)
      inspect_error = std::string(switchyard::plugin_state_name(start.info.state)) + ": " +
                      start.info.reason;
  } catch (const std::exception& e) {
    inspect_error = e.what();
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::cout << "SKIP " << start.prefix
              << "*  no usable CUDA device\n0 passed, 0 failed, 1 skipped\n";
    start.exit_status = kSkipped;
  } else if (!inspect_error.empty()) {
    std::cout << "FAIL " << start.prefix << "*  inspecting the plugin failed: " << inspect_error
              << "\n0 passed, 1 failed, 0 skipped\n";
    start.exit_status = 1;
  }
  return start;
}

}  // namespace gpu_test

#endif
