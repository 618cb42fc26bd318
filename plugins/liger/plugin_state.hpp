// What the liger plugin keeps between calls: the host of the latest entry call (for logging)
// and the options it resolved there. Set by the entry point, read by every call.
#ifndef SWITCHYARD_LIGER_PLUGIN_STATE_HPP
#define SWITCHYARD_LIGER_PLUGIN_STATE_HPP

#include "options.hpp"

#include <switchyard/abi.h>

#include <string>

namespace switchyard::liger {

inline constexpr const char* kPluginName = "liger";
inline constexpr const char* kPluginVersion = SWITCHYARD_LIGER_VERSION;

void set_host(const sy_host* host);
const sy_host* host();

void set_options(const Options& options);
Options options();

// Logs through the host (nothing when it has no log function).
void log(sy_log_level level, const std::string& message);

}  // namespace switchyard::liger

#endif
