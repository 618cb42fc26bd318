// Parsing and canonical forms of setting values, shared by every source. `what` names where
// a value came from ("SWITCHYARD_DETERMINISTIC", "--norm-kind", "/etc/sy.ini [norm] kind")
// and starts every error message, so the user knows which line or variable to fix.
#ifndef SWITCHYARD_CORE_SETTING_VALUES_HPP
#define SWITCHYARD_CORE_SETTING_VALUES_HPP

#include <optional>
#include <string>
#include <vector>

namespace switchyard::detail {

// Throws Error(SY_ERR_INVALID_ARGUMENT, message).
[[noreturn]] void throw_invalid_setting(const std::string& message);

std::string trim(const std::string& text);
std::string to_lower(const std::string& text);
std::string to_upper(const std::string& text);

// Splits at any of `separators`, trims each part and drops empty parts.
std::vector<std::string> split_list(const std::string& text, const std::string& separators);

// 1/0/true/false/yes/no in any case -> "1" or "0"; anything else throws.
std::string parse_boolean(const std::string& value, const std::string& what);

// LayerNorm | RMSNorm | L2Norm, accepted in any case, returned in this spelling.
const std::vector<std::string>& norm_kinds();
std::string canonical_norm_kind(const std::string& value, const std::string& what);

// trace | debug | info | warn | error | off in any case ("warning" is read as "warn").
// A bad level is not worth stopping a training job for: nullopt, and `problem` says why
// (the caller warns and the value is ignored), as the logger itself does.
const std::vector<std::string>& log_levels();
std::optional<std::string> parse_log_level(const std::string& value, const std::string& what,
                                           std::string* problem);

// "a, b or c"
std::string join_choices(const std::vector<std::string>& choices);

}  // namespace switchyard::detail

#endif
