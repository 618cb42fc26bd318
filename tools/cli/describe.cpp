// Decoding of capability bits and the shared text/JSON forms of plugins and settings.
#include "describe.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <sstream>

namespace switchyard::cli {

namespace {

const char* state_name(PluginState state) { return plugin_state_name(state); }

bool loaded(const PluginInfo& plugin) {
  return plugin.state == PluginState::Ok || plugin.state == PluginState::Unavailable;
}

}  // namespace

std::vector<std::string> feature_names(Family family, uint32_t features) {
  return family == Family::CrossEntropy ? sy::ce_feature_names(features)
                                        : sy::norm_feature_names(features);
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : separator) + word;
  return out;
}

std::string families_cell(const PluginInfo& plugin) {
  if (!loaded(plugin)) return "-";
  std::vector<std::string> families;
  if (plugin.cross_entropy.offered) families.emplace_back(family_name(Family::CrossEntropy));
  if (plugin.norm.offered) families.emplace_back(family_name(Family::Norm));
  return families.empty() ? "none" : join(families, ",");
}

std::string devices_cell(const PluginInfo& plugin) {
  if (!loaded(plugin)) return "-";
  uint32_t devices = 0;
  if (plugin.cross_entropy.offered) devices |= plugin.cross_entropy.devices;
  if (plugin.norm.offered) devices |= plugin.norm.devices;
  const auto names = device_names(devices);
  return names.empty() ? "-" : join(names, ",");
}

std::string determinism_cell(const PluginInfo& plugin) {
  if (!loaded(plugin)) return "-";
  std::vector<std::pair<Family, const FamilyInfo*>> offered;
  if (plugin.cross_entropy.offered) offered.emplace_back(Family::CrossEntropy, &plugin.cross_entropy);
  if (plugin.norm.offered) offered.emplace_back(Family::Norm, &plugin.norm);
  if (offered.empty()) return "-";
  const bool same = std::all_of(offered.begin(), offered.end(), [&](const auto& family) {
    return family.second->determinism == offered.front().second->determinism;
  });
  if (same) return determinism_name(offered.front().second->determinism);
  std::string cell;
  for (const auto& [family, info] : offered)
    cell += (cell.empty() ? "" : " ") + std::string(family_name(family)) + ":" +
            determinism_name(info->determinism);
  return cell;
}

// ---- JSON ---------------------------------------------------------------------------------

namespace {

Json strings_json(const std::vector<std::string>& words) {
  Json array = Json::array();
  for (const auto& word : words) array.push(word);
  return array;
}

}  // namespace

Json setting_json(const Setting& setting) {
  Json json = Json::object();
  json.set("value", setting.value)
      .set("source", source_name(setting.source))
      .set("origin", setting.origin);
  if (!setting.fallback.empty()) json.set("fallback", setting.fallback);
  return json;
}

Json family_json(Family family, const FamilyInfo& info) {
  if (!info.offered) return Json();
  Json json = Json::object();
  json.set("dtypes", strings_json(dtype_names(info.dtypes)))
      .set("dtype_bits", static_cast<int64_t>(info.dtypes))
      .set("devices", strings_json(device_names(info.devices)))
      .set("device_bits", static_cast<int64_t>(info.devices))
      .set("features", strings_json(feature_names(family, info.features)))
      .set("feature_bits", static_cast<int64_t>(info.features))
      .set("determinism", determinism_name(info.determinism))
      .set("struct_size", static_cast<int64_t>(info.table_struct_size));
  return json;
}

Json plugin_json(const PluginInfo& plugin) {
  Json abi = Json::object();
  abi.set("major", static_cast<int64_t>(plugin.abi_major))
      .set("minor", static_cast<int64_t>(plugin.abi_minor))
      .set("descriptor_struct_size", static_cast<int64_t>(plugin.descriptor_struct_size));
  Json families = Json::object();
  families.set(family_name(Family::CrossEntropy), family_json(Family::CrossEntropy, plugin.cross_entropy))
      .set(family_name(Family::Norm), family_json(Family::Norm, plugin.norm));
  Json json = Json::object();
  json.set("name", plugin.name)
      .set("path", plugin.path)
      .set("file", plugin.file_name)
      .set("state", state_name(plugin.state))
      .set("reason", plugin.reason)
      .set("version", plugin.version)
      .set("vendor", plugin.vendor)
      .set("description", plugin.description)
      .set("build_info", plugin.build_info)
      .set("abi", std::move(abi))
      .set("families", std::move(families))
      .set("log", strings_json(plugin.log));
  return json;
}

Json search_path_json(const std::vector<SearchLocation>& locations) {
  Json array = Json::array();
  for (const auto& location : locations) {
    Json candidates = Json::array();
    for (const auto& plugin : location.candidates) candidates.push(plugin_json(plugin));
    Json json = Json::object();
    json.set("path", location.path)
        .set("origin", setting_json(location.origin))
        .set("exists", location.exists)
        .set("candidates", std::move(candidates));
    array.push(std::move(json));
  }
  return array;
}

// ---- text ---------------------------------------------------------------------------------

void print_search_path(std::ostream& out, const std::vector<SearchLocation>& locations,
                       bool loaded) {
  if (locations.empty()) {
    out << "(the search path is empty)\n";
    return;
  }
  bool first = true;
  for (const auto& location : locations) {
    if (!first) out << '\n';
    first = false;
    // As Setting::describe() does: a default needs no origin ("default: built-in default").
    out << location.path << "  (" << source_name(location.origin.source);
    if (location.origin.source != Source::Default && !location.origin.origin.empty())
      out << ": " << location.origin.origin;
    out << ")\n";
    if (!location.exists) {
      out << "  does not exist\n";
      continue;
    }
    if (location.candidates.empty()) {
      out << "  no plugins (no file named libswitchyard-<name>.so)\n";
      continue;
    }
    Table table = loaded ? Table({"NAME", "VERSION", "STATE", "FAMILIES", "DEVICES",
                                  "DETERMINISM", "REASON"})
                         : Table({"NAME", "FILE"});
    for (const auto& plugin : location.candidates) {
      if (!loaded) {
        table.add({plugin.name, plugin.path});
        continue;
      }
      table.add({plugin.name.empty() ? plugin.file_name : plugin.name,
                 plugin.version.empty() ? "-" : plugin.version, state_name(plugin.state),
                 families_cell(plugin), devices_cell(plugin), determinism_cell(plugin),
                 plugin.reason});
    }
    std::ostringstream text;
    table.print(text);
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) out << "  " << line << '\n';
  }
}

void print_fields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields,
                  const std::string& indent) {
  size_t width = 0;
  for (const auto& field : fields) width = std::max(width, field.first.size());
  for (const auto& [key, value] : fields) {
    out << indent << key;
    if (value.empty()) {
      out << '\n';
      continue;
    }
    out << std::string(width - key.size() + 2, ' ');
    // Continuation lines of a multi-line value stay in the value column.
    std::istringstream lines(value);
    bool first = true;
    for (std::string line; std::getline(lines, line);) {
      if (!first) out << indent << std::string(width + 2, ' ');
      out << line << '\n';
      first = false;
    }
  }
}

}  // namespace switchyard::cli
