// The SWITCHYARD_* environment variables: reading them into a settings layer, and warning
// (never failing) about names Switchyard does not know.
#ifndef SWITCHYARD_CORE_ENVIRONMENT_HPP
#define SWITCHYARD_CORE_ENVIRONMENT_HPP

#include "settings_layer.hpp"

#include <map>
#include <string>
#include <vector>

namespace switchyard::detail {

using Environment = std::map<std::string, std::string>;

// A snapshot of this process's environment.
Environment process_environment();

// The variables Switchyard reads, current names only (renamed ones are in
// renamed_settings.hpp), without the SWITCHYARD_OPTION_<PLUGIN>__<KEY> family.
const std::vector<std::string>& known_environment_variables();

// Reads every SWITCHYARD_* variable. An empty value counts as unset. Throws Error for a
// value that cannot mean anything (SWITCHYARD_DETERMINISTIC=maybe).
SettingsLayer read_environment(const Environment& environment);

}  // namespace switchyard::detail

#endif
