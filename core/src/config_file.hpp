// The Switchyard config file: INI as Boost.Program_options reads it.
//
//   [cross_entropy]  backend = liger
//   [norm]           backend = te          kind = RMSNorm
//   [plugins]        path = /opt/a:/opt/b  system_path = /opt/sy   disable = apex,te_*
//   [runtime]        deterministic = 1     log_level = info
//   [plugin.fused]   cache_dir = /scratch/sy     ([plugin.*] applies to every plugin)
//
// Relative paths (plugin folders, a backend given as a .so) are relative to the file's
// folder, so a config file can travel with the plugins next to it.
#ifndef SWITCHYARD_CORE_CONFIG_FILE_HPP
#define SWITCHYARD_CORE_CONFIG_FILE_HPP

#include "settings_layer.hpp"

#include <string>
#include <vector>

namespace switchyard::detail {

// The keys read, as "<section>.<key>" (plugin options excluded).
const std::vector<std::string>& known_config_keys();

// Reads the file `file.value`; `file` says who named it (its source and origin), for the
// error raised when the file cannot be read or parsed. Unknown keys are warnings.
SettingsLayer read_config_file(const Setting& file);

}  // namespace switchyard::detail

#endif
