// What the process that loads a candidate does: load, validate and probe the plugin, then
// write the PluginInfo to a pipe. Runs in the switchyard-probe helper (a fresh process), and
// in the forked child of isolated_load's fallback when the helper is missing.
#ifndef SWITCHYARD_CORE_PROBE_CHILD_HPP
#define SWITCHYARD_CORE_PROBE_CHILD_HPP

#include "host_services.hpp"

#include <string>

namespace switchyard::detail {

// Exit statuses of the loading process; isolated_load explains each.
enum ProbeExit : int {
  kProbeAnswered = 0,       // the PluginInfo was written
  kProbeWriteFailed = 2,    // the pipe to the parent broke
  kProbeFailed = 3,         // an exception escaped the loader itself
  kProbeBadArguments = 64,  // switchyard-probe was started with arguments it does not know
};

// Loads `path` with `host`'s options, probe included, capturing what the plugin logs
// instead of logging it (a forked child must not touch spdlog's locks), and writes the
// serialized PluginInfo to `result_fd`. Never throws; returns the exit status to leave with.
// The caller leaves with _exit(): no static destructor of a plugin may run and turn an
// answered load into a crash.
int load_and_report(int result_fd, const std::string& path, const HostServices& host) noexcept;

}  // namespace switchyard::detail

#endif
