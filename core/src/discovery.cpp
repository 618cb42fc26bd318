// Search path and candidate listing.
#include "discovery.hpp"

#include "backend_names.hpp"
#include "plugin_library.hpp"

#include <dlfcn.h>
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace switchyard::detail {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCandidatePrefix = "libswitchyard-";
constexpr const char* kCandidateSuffix = ".so";

bool is_candidate_file_name(const std::string& name) {
  const std::string prefix(kCandidatePrefix), suffix(kCandidateSuffix);
  return name.size() > prefix.size() + suffix.size() &&
         name.compare(0, prefix.size(), prefix) == 0 &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> split_colons(const std::string& value) {
  std::vector<std::string> parts;
  std::string::size_type start = 0;
  while (start <= value.size()) {
    const auto end = std::min(value.find(':', start), value.size());
    if (end > start) parts.push_back(value.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  const fs::path made = fs::absolute(path, ec);
  return ec ? path : made.lexically_normal().string();
}

bool is_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

PluginInfo candidate(const std::string& path, const Settings& settings) {
  PluginInfo info = blank_plugin_info(path);
  info.state = PluginState::Ok;
  if (auto pattern = disabling_setting(settings, info.name, info.file_name)) {
    info.state = PluginState::Disabled;
    info.reason = disabled_reason(*pattern);
  }
  return info;
}

}  // namespace

std::string default_system_path() {
  Dl_info where{};
  // Any function of libswitchyard locates the library it lives in.
  if (dladdr(reinterpret_cast<void*>(&default_system_path), &where) == 0 ||
      where.dli_fname == nullptr) {
    return {};
  }
  const fs::path library = absolute(where.dli_fname);
  return (library.parent_path() / "switchyard" / "plugins").string();
}

std::string where_from(const Setting& origin) {
  std::string text = source_name(origin.source);
  if (!origin.origin.empty() && origin.source != Source::Default) text += ": " + origin.origin;
  return text;
}

std::vector<SearchEntry> search_path(const Settings& settings) {
  std::vector<SearchEntry> entries;
  for (const Setting& setting : settings.plugin_path) {
    for (const std::string& part : split_colons(setting.value))
      entries.push_back(SearchEntry{absolute(part), setting});
  }
  Setting system = settings.system_path;
  if (system.value.empty()) {
    system.value = default_system_path();
    if (system.origin.empty()) system.origin = "<libdir>/switchyard/plugins";
  }
  for (const std::string& part : split_colons(system.value))
    entries.push_back(SearchEntry{absolute(part), system});
  return entries;
}

SearchLocation list_location(const SearchEntry& entry, const Settings& settings) {
  SearchLocation location;
  location.path = entry.path;
  location.origin = entry.origin;
  location.exists = exists(entry.path);
  if (!location.exists) return location;
  if (!is_directory(entry.path)) {
    location.candidates.push_back(candidate(entry.path, settings));
    return location;
  }
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(entry.path, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (is_candidate_file_name(name) && !it->is_directory(type_ec))
      files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) location.candidates.push_back(candidate(file, settings));
  return location;
}

std::vector<SearchLocation> list_candidates(const Settings& settings) {
  std::vector<SearchLocation> locations;
  for (const SearchEntry& entry : search_path(settings))
    locations.push_back(list_location(entry, settings));
  return locations;
}

std::optional<Setting> disabling_setting(const Settings& settings, const std::string& name,
                                         const std::string& file_name) {
  for (const Setting& setting : settings.disable) {
    for (const std::string& pattern : split_colons(setting.value)) {
      std::string::size_type start = 0;
      // SWITCHYARD_DISABLE may also be a comma-separated list.
      while (start <= pattern.size()) {
        const auto end = std::min(pattern.find(',', start), pattern.size());
        const std::string glob = pattern.substr(start, end - start);
        start = end + 1;
        if (glob.empty()) continue;
        if (fnmatch(glob.c_str(), name.c_str(), 0) == 0 ||
            fnmatch(glob.c_str(), file_name.c_str(), 0) == 0) {
          Setting matched = setting;
          matched.value = glob;
          return matched;
        }
      }
    }
  }
  return std::nullopt;
}

std::string disabled_reason(const Setting& pattern) {
  return "disabled by pattern '" + pattern.value + "' (" + where_from(pattern) +
         "); it is never loaded";
}

std::optional<FoundFile> find_plugin_file(const Settings& settings, const std::string& name) {
  const std::string wanted = plugin_file_name(name);
  for (const SearchEntry& entry : search_path(settings)) {
    if (is_directory(entry.path)) {
      const std::string path = (fs::path(entry.path) / wanted).string();
      if (exists(path) && !is_directory(path)) return FoundFile{path, entry};
    } else if (fs::path(entry.path).filename() == wanted && exists(entry.path)) {
      return FoundFile{entry.path, entry};
    }
  }
  return std::nullopt;
}

}  // namespace switchyard::detail
