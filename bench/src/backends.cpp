#include "backends.hpp"

#include <map>
#include <set>

namespace switchyard::bench {
namespace {

const char* key(Family family) { return family == Family::CrossEntropy ? "ce" : "norm"; }

const char* device_word(DLDeviceType device) { return device == kDLCUDA ? "cuda" : "cpu"; }

// Why a plugin cannot serve this family on this device; empty when it can.
std::string why_not(const PluginInfo& plugin, Family family, DLDeviceType device) {
  if (plugin.state != PluginState::Ok)
    return std::string(plugin_state_name(plugin.state)) +
           (plugin.reason.empty() ? "" : ": " + plugin.reason);
  const FamilyInfo& info = family == Family::CrossEntropy ? plugin.cross_entropy : plugin.norm;
  if (!info.offered) return std::string("does not offer ") + family_name(family);
  if ((info.devices & SY_DEVICE_BIT(device)) == 0)
    return std::string("does not declare device ") + device_word(device) + " for " +
           family_name(family);
  return {};
}

}  // namespace

BackendPlan plan_backends(const std::vector<SearchLocation>& found, Family family,
                          DLDeviceType device, const std::vector<std::string>& requested) {
  // The first plugin of a name on the search path is the one selection would open.
  std::map<std::string, const PluginInfo*> by_name;
  std::vector<const PluginInfo*> in_order;
  for (const auto& location : found)
    for (const auto& plugin : location.candidates)
      if (by_name.emplace(plugin.name, &plugin).second) in_order.push_back(&plugin);

  BackendPlan plan;
  if (!requested.empty()) {
    for (const auto& name : requested) {
      const auto it = by_name.find(name);
      const std::string reason = it == by_name.end() ? "" : why_not(*it->second, family, device);
      // A name discovery does not know (a path, a plugin elsewhere) is left to selection,
      // whose error says what was searched.
      if (reason.empty())
        plan.names.push_back(name);
      else
        plan.not_run.push_back({key(family), name, reason});
    }
    return plan;
  }
  for (const PluginInfo* plugin : in_order) {
    const std::string reason = why_not(*plugin, family, device);
    if (reason.empty())
      plan.names.push_back(plugin->name);
    else
      plan.not_run.push_back({key(family), plugin->name, reason});
  }
  return plan;
}

}  // namespace switchyard::bench
