// The plugin search path and what lies on it, found by file name only (nothing is opened).
#ifndef SWITCHYARD_CORE_DISCOVERY_HPP
#define SWITCHYARD_CORE_DISCOVERY_HPP

#include <switchyard/switchyard.hpp>

#include <optional>
#include <string>
#include <vector>

namespace switchyard::detail {

// <folder of libswitchyard.so>/switchyard/plugins, found through dladdr. Used when
// Settings::system_path is empty.
std::string default_system_path();

// One entry of the search path (a folder or a single .so) and the setting that put it there.
struct SearchEntry {
  std::string path;
  Setting origin;
};

// Settings::plugin_path entries first, in order, then the system folder. Entries holding
// ':' are split. Relative paths are made absolute against the working directory.
std::vector<SearchEntry> search_path(const Settings& settings);

// The libswitchyard-*.so files of one entry, in name order (a file entry is its own single
// candidate). Candidates matching SWITCHYARD_DISABLE are Disabled; the others are not
// opened: state Ok, name taken from the file name.
SearchLocation list_location(const SearchEntry& entry, const Settings& settings);
std::vector<SearchLocation> list_candidates(const Settings& settings);

// The SWITCHYARD_DISABLE setting whose glob matches the plugin name or file name, if any.
std::optional<Setting> disabling_setting(const Settings& settings, const std::string& name,
                                         const std::string& file_name);

// "disabled by SWITCHYARD_DISABLE pattern 'te*' (environment: SWITCHYARD_DISABLE)"
std::string disabled_reason(const Setting& pattern);

// The first file for plugin `name` in search order (libswitchyard-<name>.so in a folder, or
// a file entry with that name), with the entry it was found in.
struct FoundFile {
  std::string path;
  SearchEntry entry;
};
std::optional<FoundFile> find_plugin_file(const Settings& settings, const std::string& name);

// "environment: SWITCHYARD_PLUGIN_PATH", "default" — where a search entry came from.
std::string where_from(const Setting& origin);

}  // namespace switchyard::detail

#endif
