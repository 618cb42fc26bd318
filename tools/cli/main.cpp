// `switchyard <command> [args]`: dispatches to the subcommands and turns any escaped error
// into a message on stderr and a non-zero exit code.
#include "commands.hpp"
#include "output.hpp"

#include <switchyard/switchyard.hpp>

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

using switchyard::cli::Args;

struct Command {
  const char* name;
  int (*run)(const Args&);
  const char* summary;
};

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"list", switchyard::cli::cmd_list,
       "every plugin on the search path: state, families, devices, determinism"},
      {"inspect", switchyard::cli::cmd_inspect,
       "everything one plugin reports: descriptor, ABI, capabilities, build, log"},
      {"doctor", switchyard::cli::cmd_doctor,
       "settings with their sources, plugins, CUDA, NCCL, JIT cache; a verdict"},
      {"select", switchyard::cli::cmd_select,
       "what each family resolves to with the given flags and environment, and why"},
      {"check", switchyard::cli::cmd_check, "run the conformance suite against a plugin"},
      {"train", switchyard::cli::cmd_train,
       "the demo: train a tiny LM head through the selected backends"},
      {"cache", switchyard::cli::cmd_cache, "list or clear the fused plugin's JIT kernel cache"},
      {"bench", switchyard::cli::cmd_bench,
       "switchyard-bench: time and check every backend (its own flags: bench --help)"},
  };
  return table;
}

void print_usage(std::ostream& out) {
  out << "usage: switchyard <command> [options]\n"
         "       switchyard <command> --help\n"
         "       switchyard --version\n\n"
         "Switchyard loads cross entropy and normalization backends as plugins at run time.\n\n"
         "commands:\n";
  size_t width = 0;
  for (const auto& command : commands()) width = std::max(width, std::string(command.name).size());
  for (const auto& command : commands()) {
    const std::string name = command.name;
    out << "  " << name << std::string(width - name.size() + 2, ' ') << command.summary << '\n';
  }
  out << "\nThe read-only commands (list, inspect, doctor, select) take --json. Every command\n"
         "accepts the selection flags (--cross-entropy, --norm, --plugin-path, Megatron's\n"
         "--cross-entropy-loss-fusion, --cross-entropy-fusion-impl, --transformer-impl,\n"
         "--normalization, ...); see 'switchyard <command> --help'.\n";
}

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const auto& command : commands()) names.emplace_back(command.name);
  return names;
}

int run_command(const Command& command, const Args& args) {
  try {
    return command.run(args);
  } catch (const switchyard::Error& e) {
    return switchyard::cli::report_error(
        command.name, std::string(e.what()) + " [" + switchyard::status_name(e.status()) + "]");
  } catch (const std::exception& e) {
    return switchyard::cli::report_error(command.name, e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args arguments(argv + 1, argv + argc);
  if (arguments.empty()) {
    print_usage(std::cerr);
    return 2;
  }
  const std::string& first = arguments.front();
  if (first == "--help" || first == "-h") {
    print_usage(std::cout);
    return 0;
  }
  if (first == "--version" || first == "-V") {
    std::cout << "switchyard " << switchyard::version() << " (plugin ABI " << SY_ABI_MAJOR << '.'
              << SY_ABI_MINOR << ")\n";
    return 0;
  }
  if (first == "help") {  // `switchyard help <command>` is `switchyard <command> --help`
    if (arguments.size() == 1) {
      print_usage(std::cout);
      return 0;
    }
    for (const auto& command : commands())
      if (arguments[1] == command.name) return run_command(command, {"--help"});
    return switchyard::cli::report_error(
        "", "unknown command '" + arguments[1] + "'" +
                switchyard::cli::did_you_mean(arguments[1], command_names()) +
                "; run 'switchyard --help' for the commands",
        2);
  }
  if (!first.empty() && first[0] == '-') {
    return switchyard::cli::report_error(
        "", "unknown option '" + first + "'" +
                switchyard::cli::did_you_mean(first, {"--help", "--version"}) +
                "; options go after the command: switchyard <command> [options]",
        2);
  }
  for (const auto& command : commands())
    if (first == command.name) return run_command(command, Args(arguments.begin() + 1, arguments.end()));
  return switchyard::cli::report_error(
      "", "unknown command '" + first + "'" + switchyard::cli::did_you_mean(first, command_names()) +
              "; the commands are " + [] {
                std::string list;
                for (const auto& name : command_names()) list += (list.empty() ? "" : ", ") + name;
                return list;
              }() + " (see 'switchyard --help')",
      2);
}
