// What the plugin keeps between calls: the host it was handed (for logging) and the name it
// logs under. Set by the entry point, read by everything else.
#ifndef SWITCHYARD_NATIVE_PLUGIN_STATE_HPP
#define SWITCHYARD_NATIVE_PLUGIN_STATE_HPP

#include <switchyard/abi.h>

#include <string>

namespace switchyard::native {

inline constexpr const char* kPluginName = "native";
inline constexpr const char* kPluginVersion = SWITCHYARD_NATIVE_VERSION;

// The host of the latest entry call; NULL before the first one.
void set_host(const sy_host* host);
const sy_host* host();

// Logs through the host (nothing when it has no log function).
void log(sy_log_level level, const std::string& message);

}  // namespace switchyard::native

#endif
