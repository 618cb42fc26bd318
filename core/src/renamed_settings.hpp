// Settings that were renamed. The old spelling keeps working and logs one deprecation
// warning per process. When both spellings are given in the same source, the new one wins.
// To rename a setting, add a row here; the readers consult these tables.
#ifndef SWITCHYARD_CORE_RENAMED_SETTINGS_HPP
#define SWITCHYARD_CORE_RENAMED_SETTINGS_HPP

#include <string>
#include <vector>

namespace switchyard::detail {

struct Rename {
  std::string old_name;
  std::string new_name;
};

// SWITCHYARD_* environment variables (full names).
const std::vector<Rename>& renamed_environment_variables();

// Config keys as Boost.Program_options spells them: "<section>.<key>".
const std::vector<Rename>& renamed_config_keys();

// The new name for `name`, or "" when `name` was not renamed.
std::string new_name_of(const std::vector<Rename>& table, const std::string& name);

}  // namespace switchyard::detail

#endif
