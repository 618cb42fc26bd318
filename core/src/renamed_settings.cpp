// The rename tables (see renamed_settings.hpp).
#include "renamed_settings.hpp"

namespace switchyard::detail {

const std::vector<Rename>& renamed_environment_variables() {
  static const std::vector<Rename> table{
      {"SWITCHYARD_LOSS", "SWITCHYARD_CROSS_ENTROPY"},
      {"SWITCHYARD_PLUGIN_DIR", "SWITCHYARD_PLUGIN_PATH"},
  };
  return table;
}

const std::vector<Rename>& renamed_config_keys() {
  static const std::vector<Rename> table{
      {"loss.backend", "cross_entropy.backend"},
      {"plugins.dir", "plugins.path"},
      {"normalization.backend", "norm.backend"},
      {"normalization.kind", "norm.kind"},
  };
  return table;
}

std::string new_name_of(const std::vector<Rename>& table, const std::string& name) {
  for (const Rename& rename : table) {
    if (rename.old_name == name) return rename.new_name;
  }
  return {};
}

}  // namespace switchyard::detail
