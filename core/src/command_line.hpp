// The selection flags in RuntimeOptions::args (Switchyard's and Megatron's). Everything
// else in the argument list belongs to the trainer and is skipped.
#ifndef SWITCHYARD_CORE_COMMAND_LINE_HPP
#define SWITCHYARD_CORE_COMMAND_LINE_HPP

#include "settings_layer.hpp"

#include <string>
#include <vector>

namespace switchyard::detail {

// Reads the selection flags, in both "--flag value" and "--flag=value" forms; for a flag
// given twice the last one wins, except the repeatable --plugin-path and --plugin-option.
// Throws Error for a flag without its value or with a value that cannot mean anything.
SettingsLayer read_command_line(const std::vector<std::string>& args);

}  // namespace switchyard::detail

#endif
