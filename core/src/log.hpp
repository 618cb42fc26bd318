// The core's logging: one spdlog logger named "switchyard", level from SWITCHYARD_LOG_LEVEL
// (trace, debug, info, warn, error, off; default warn). Plugin lines carry the plugin name.
#ifndef SWITCHYARD_CORE_LOG_HPP
#define SWITCHYARD_CORE_LOG_HPP

#include <switchyard/abi.h>

#include <spdlog/logger.h>

#include <string>

namespace switchyard::detail {

// The process-wide logger. Created on first use; thread-safe.
spdlog::logger& logger();

// Sets the level from a name ("trace".."error", "off"). Returns false for an unknown name.
bool set_log_level(const std::string& name);

// The function behind sy_host.log: "[plugin:<name>] <message>" at the mapped level.
void plugin_log(sy_log_level level, const char* plugin, const char* message);

// Logs a warning only the first time `key` is seen in this process (deprecations).
// Returns true when it logged.
bool warn_once(const std::string& key, const std::string& message);

}  // namespace switchyard::detail

#endif
