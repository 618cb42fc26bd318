// Loading a plugin in a child process, so that a plugin that crashes or hangs while loading
// cannot take the caller down. Used for listing and inspection, and for the error report when
// a selection fails; never for the plugin a selection actually uses.
//
// The child is a fresh process: the switchyard-probe helper, started with posix_spawn. A fork
// of the caller would inherit its state: CUDA, once initialised, is unusable in a forked child
// (every CUDA plugin's probe() would fail there), and locks other threads held at fork time
// stay held forever. Only when the helper is missing does isolated_load fall back to a fork,
// with a warning.
#ifndef SWITCHYARD_CORE_ISOLATED_LOAD_HPP
#define SWITCHYARD_CORE_ISOLATED_LOAD_HPP

#include "host_services.hpp"
#include "plugin_info_wire.hpp"  // the bytes the child sends back

#include <switchyard/switchyard.hpp>

#include <chrono>
#include <string>

namespace switchyard::detail {

constexpr std::chrono::milliseconds kIsolatedLoadTimeout{10000};

// The helper's file name, and where it lives: <folder of libswitchyard.so>/switchyard/ (next
// to the plugins folder), in the build tree as in an installation. Empty when dladdr cannot
// locate libswitchyard.
constexpr const char* kProbeHelperName = "switchyard-probe";
std::string probe_helper_path();

// Loads, validates and probes `path` in the `helper` process (a fork of this one when
// `helper` cannot be started). A child killed by a signal is reported as Crashed ("crashed
// while loading (signal 11, Segmentation fault)"); one that does not answer within `timeout`
// is killed and reported as Crashed too. What the plugin logs comes back in PluginInfo::log.
// Never throws for a bad plugin; throws Error(SY_ERR_INTERNAL) only when no child can be
// started at all.
PluginInfo isolated_load(const std::string& path, const HostServices& host,
                         std::chrono::milliseconds timeout = kIsolatedLoadTimeout,
                         const std::string& helper = probe_helper_path());

}  // namespace switchyard::detail

#endif
