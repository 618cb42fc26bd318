// The bytes a child process that loaded a plugin sends back to the process that asked: one
// PluginInfo, length-prefixed fields, little-endian 64-bit numbers. Written by the
// switchyard-probe helper (and by the forked child of the fallback), read by isolated_load.
#ifndef SWITCHYARD_CORE_PLUGIN_INFO_WIRE_HPP
#define SWITCHYARD_CORE_PLUGIN_INFO_WIRE_HPP

#include <switchyard/switchyard.hpp>

#include <string>

namespace switchyard::detail {

std::string serialize_plugin_info(const PluginInfo& info);

// False, with *info untouched, for anything that is not exactly one serialized PluginInfo.
bool deserialize_plugin_info(const std::string& bytes, PluginInfo* info);

}  // namespace switchyard::detail

#endif
