// Loading a plugin in a forked child process, so that a plugin that crashes or hangs while
// loading cannot take the caller down. Used for listing and inspection, and for the error
// report when a selection fails; never for the plugin a selection actually uses.
#ifndef SWITCHYARD_CORE_ISOLATED_LOAD_HPP
#define SWITCHYARD_CORE_ISOLATED_LOAD_HPP

#include "host_services.hpp"

#include <switchyard/switchyard.hpp>

#include <chrono>
#include <string>

namespace switchyard::detail {

constexpr std::chrono::milliseconds kIsolatedLoadTimeout{10000};

// Loads, validates and probes `path` in a child. A child killed by a signal is reported as
// Crashed ("crashed while loading (signal 11, Segmentation fault)"); one that does not
// answer within `timeout` is killed and reported as Crashed too. Never throws for a bad
// plugin; throws Error(SY_ERR_INTERNAL) only when no child can be started at all.
PluginInfo isolated_load(const std::string& path, const HostServices& host,
                         std::chrono::milliseconds timeout = kIsolatedLoadTimeout);

// The wire format between child and parent (exposed for tests).
std::string serialize_plugin_info(const PluginInfo& info);
bool deserialize_plugin_info(const std::string& bytes, PluginInfo* info);

}  // namespace switchyard::detail

#endif
