// switchyard-probe: loads, validates and probes one plugin in a fresh process and writes what
// it found to stdout, for isolated_load (core/src/isolated_load.cpp), which starts it. Not a
// command for people: `switchyard inspect` shows the same, readably.
//
//   switchyard-probe PLUGIN_PATH [PLUGIN.KEY=VALUE]...
//
// The options are what sy_host.option answers ("*.KEY" for every plugin). The log level comes
// from SWITCHYARD_LOG_LEVEL, which isolated_load sets to its own. stdout carries the
// serialized PluginInfo; the plugin's own stdout goes to stderr. It never forks: it is the
// isolation.
#include "host_services.hpp"
#include "probe_child.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace {

using switchyard::detail::HostServices;
using switchyard::detail::kProbeBadArguments;

int refuse(const char* why) {
  std::fprintf(stderr,
               "switchyard-probe: %s\n"
               "usage: switchyard-probe PLUGIN_PATH [PLUGIN.KEY=VALUE]... | <reader>\n"
               "It is started by libswitchyard to list plugins in a separate process and "
               "writes binary data to stdout; use `switchyard inspect PLUGIN_PATH` instead.\n",
               why);
  return kProbeBadArguments;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return refuse("no plugin path was given");
  if (::isatty(STDOUT_FILENO) == 1) return refuse("stdout is a terminal, not a pipe");
  std::map<std::string, std::string> options;
  for (int i = 2; i < argc; ++i) {
    const char* equals = std::strchr(argv[i], '=');
    if (equals == nullptr || equals == argv[i]) {
      const std::string why = std::string("option argument '") + argv[i] +
                              "' is not PLUGIN.KEY=VALUE";
      return refuse(why.c_str());
    }
    options[std::string(argv[i], static_cast<std::size_t>(equals - argv[i]))] = equals + 1;
  }
  // The answer goes to the pipe on stdout; what the plugin prints goes to stderr.
  const int result_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  if (result_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::perror("switchyard-probe: cannot set up its output");
    return switchyard::detail::kProbeWriteFailed;
  }
  const auto services = std::make_shared<const HostServices>(std::move(options));
  // For sy_host.option calls from the plugin's own threads, outside any call into it.
  HostServices::make_default(services);
  // _exit: a plugin's static destructor must not turn an answered load into a crash.
  ::_exit(switchyard::detail::load_and_report(result_fd, argv[1], *services));
}
