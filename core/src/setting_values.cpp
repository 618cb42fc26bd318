// Parsing and canonical forms of setting values.
#include "setting_values.hpp"

#include "did_you_mean.hpp"

#include <switchyard/switchyard.hpp>

#include <algorithm>
#include <cctype>

namespace switchyard::detail {

void throw_invalid_setting(const std::string& message) {
  throw Error(SY_ERR_INVALID_ARGUMENT, message);
}

std::string trim(const std::string& text) {
  const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  auto first = std::find_if_not(text.begin(), text.end(), is_space);
  auto last = std::find_if_not(text.rbegin(), text.rend(), is_space).base();
  return first < last ? std::string(first, last) : std::string();
}

std::string to_lower(const std::string& text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string to_upper(const std::string& text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

std::vector<std::string> split_list(const std::string& text, const std::string& separators) {
  std::vector<std::string> parts;
  std::string::size_type start = 0;
  while (start <= text.size()) {
    const auto end = text.find_first_of(separators, start);
    const std::string part =
        trim(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (!part.empty()) parts.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string join_choices(const std::vector<std::string>& choices) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += choices[i];
  }
  return out;
}

std::string parse_boolean(const std::string& value, const std::string& what) {
  const std::string v = to_lower(trim(value));
  if (v == "1" || v == "true" || v == "yes") return "1";
  if (v == "0" || v == "false" || v == "no") return "0";
  throw_invalid_setting(what + " is '" + value +
                        "', which is not a boolean: expected 1, 0, true, false, yes or no.");
}

const std::vector<std::string>& norm_kinds() {
  static const std::vector<std::string> kinds{"LayerNorm", "RMSNorm", "L2Norm"};
  return kinds;
}

std::string canonical_norm_kind(const std::string& value, const std::string& what) {
  const std::string v = to_lower(trim(value));
  for (const std::string& kind : norm_kinds()) {
    if (to_lower(kind) == v) return kind;
  }
  throw_invalid_setting(what + " is '" + value + "', which is not a normalization kind: expected " +
                        join_choices(norm_kinds()) + did_you_mean(value, norm_kinds()) + ".");
}

const std::vector<std::string>& log_levels() {
  static const std::vector<std::string> levels{"trace", "debug", "info", "warn", "error", "off"};
  return levels;
}

std::optional<std::string> parse_log_level(const std::string& value, const std::string& what,
                                           std::string* problem) {
  const std::string v = to_lower(trim(value));
  if (v == "warning") return std::string("warn");  // spdlog's and Python's spelling
  for (const std::string& level : log_levels()) {
    if (level == v) return level;
  }
  if (problem) {
    *problem = what + " is '" + value + "', which is not a log level: expected " +
               join_choices(log_levels()) + did_you_mean(value, log_levels()) + "; it is ignored.";
  }
  return std::nullopt;
}

}  // namespace switchyard::detail
