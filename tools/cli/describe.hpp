// Words for what the core reports about plugins and settings: capability bits decoded into
// names, and the text and JSON forms shared by list, inspect, doctor and select.
#ifndef SWITCHYARD_CLI_DESCRIBE_HPP
#define SWITCHYARD_CLI_DESCRIBE_HPP

#include "output.hpp"

#include <switchyard/capability_names.hpp>
#include <switchyard/switchyard.hpp>

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::cli {

// Bit sets decoded into names (the SDK's words, shared with the conformance report); a bit
// without a name shows as "bit<N>".
using sy::determinism_name;  // "deterministic", ...
using sy::device_names;      // "cpu", "cuda", ...
using sy::dtype_names;       // "float32", "float16", "bfloat16"
std::vector<std::string> feature_names(Family family, uint32_t features);

std::string join(const std::vector<std::string>& words, const std::string& separator = ", ");

// "cross_entropy,norm", or "-" when the plugin was not loaded or offers nothing.
std::string families_cell(const PluginInfo& plugin);
// Devices over both families: "cpu,cuda", or "-".
std::string devices_cell(const PluginInfo& plugin);
// "deterministic", or per family when they differ: "cross_entropy:deterministic norm:unknown".
std::string determinism_cell(const PluginInfo& plugin);

Json setting_json(const Setting& setting);
Json family_json(Family family, const FamilyInfo& info);
Json plugin_json(const PluginInfo& plugin);
Json search_path_json(const std::vector<SearchLocation>& locations);

// The search path as text: each location (with the setting that put it there) followed by
// an aligned table of its candidates. Shared by list and doctor. With `loaded` false (the
// candidates were only named, not loaded) the table shows names and files only.
void print_search_path(std::ostream& out, const std::vector<SearchLocation>& locations,
                       bool loaded = true);

// "key  value" lines with the values aligned, each line prefixed by `indent`.
void print_fields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields,
                  const std::string& indent = "");

}  // namespace switchyard::cli

#endif
