// Printable names of the core's enums and the library version.
#include <switchyard/switchyard.hpp>

namespace switchyard {

const char* version() noexcept { return SWITCHYARD_VERSION; }

const char* status_name(sy_status status) noexcept {
  switch (status) {
    case SY_OK: return "SY_OK";
    case SY_ERR_INVALID_ARGUMENT: return "SY_ERR_INVALID_ARGUMENT";
    case SY_ERR_UNSUPPORTED: return "SY_ERR_UNSUPPORTED";
    case SY_ERR_UNAVAILABLE: return "SY_ERR_UNAVAILABLE";
    case SY_ERR_OUT_OF_MEMORY: return "SY_ERR_OUT_OF_MEMORY";
    case SY_ERR_COMMUNICATION: return "SY_ERR_COMMUNICATION";
    case SY_ERR_INTERNAL: return "SY_ERR_INTERNAL";
  }
  return "SY_ERR_<unknown status>";
}

const char* source_name(Source source) noexcept {
  switch (source) {
    case Source::Api: return "API";
    case Source::CommandLine: return "command line";
    case Source::Environment: return "environment";
    case Source::ConfigFile: return "config file";
    case Source::Default: return "default";
  }
  return "?";
}

const char* family_name(Family family) noexcept {
  return family == Family::CrossEntropy ? "cross_entropy" : "norm";
}

const char* plugin_state_name(PluginState state) noexcept {
  switch (state) {
    case PluginState::Ok: return "ok";
    case PluginState::Unavailable: return "unavailable";
    case PluginState::Rejected: return "rejected";
    case PluginState::Crashed: return "crashed";
    case PluginState::Disabled: return "disabled";
  }
  return "?";
}

std::string Setting::describe() const {
  std::string s = value.empty() ? std::string("(none)") : value;
  s += " (";
  s += source_name(source);
  if (!origin.empty() && source != Source::Default) s += ": " + origin;
  s += ")";
  return s;
}

}  // namespace switchyard
