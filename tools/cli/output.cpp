// Output helpers: aligned tables, a small JSON writer, strict flag parsing, error lines and a
// progress line.
#include "output.hpp"

#include <boost/program_options/errors.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/value_semantic.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

namespace po = boost::program_options;

namespace switchyard::cli {

// ---- text helpers ---------------------------------------------------------------------------

namespace {

// Width on a terminal, counting UTF-8 code points rather than bytes (close enough for the
// names and paths shown here).
size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text)
    if ((c & 0xC0u) != 0x80u) ++width;
  return width;
}

// A table cell is one line: embedded line breaks would break the column alignment.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return text;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const auto& candidate : candidates) {
    // A prefix of a long name is a plausible typo too ("--cross-entropy" for
    // "--cross-entropy-fusion-impl"), and edit distance alone would rate it poorly.
    const bool is_prefix = word.size() >= 3 && candidate.compare(0, word.size(), word) == 0;
    const size_t distance = is_prefix ? 1 : edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  // Allow roughly one typo per three characters, at least two.
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_distance <= limit ? best : std::string();
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string match = closest_match(word, candidates);
  return match.empty() ? std::string() : " (did you mean '" + match + "'?)";
}

// ---- Table ------------------------------------------------------------------------------------

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {
  for (auto& header : headers_) header = one_line(std::move(header));
}

void Table::add(std::vector<std::string> row) {
  row.resize(headers_.size());
  for (auto& cell : row) cell = one_line(std::move(cell));
  rows_.push_back(std::move(row));
}

void Table::print(std::ostream& out) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = display_width(headers_[c]);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      line += cells[c];
      if (c + 1 < cells.size()) line.append(widths[c] - display_width(cells[c]) + 2, ' ');
    }
    // No trailing blanks when the last cells are empty.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  };
  print_row(headers_);
  std::vector<std::string> rule;
  for (size_t c = 0; c < headers_.size(); ++c) rule.emplace_back(widths[c], '-');
  print_row(rule);
  for (const auto& row : rows_) print_row(row);
}

// ---- Json -------------------------------------------------------------------------------------

Json::Json() = default;
Json::Json(bool b) : kind_(Kind::Bool), b_(b) {}
Json::Json(int v) : kind_(Kind::Int), i_(v) {}
Json::Json(int64_t v) : kind_(Kind::Int), i_(v) {}
Json::Json(double v) : kind_(Kind::Double), d_(v) {}
Json::Json(const char* s) : kind_(s ? Kind::String : Kind::Null), s_(s ? s : "") {}
Json::Json(std::string s) : kind_(Kind::String), s_(std::move(s)) {}

Json Json::array() {
  Json j;
  j.kind_ = Kind::Array;
  return j;
}

Json Json::object() {
  Json j;
  j.kind_ = Kind::Object;
  return j;
}

Json& Json::set(const std::string& key, Json value) {
  if (kind_ == Kind::Null) kind_ = Kind::Object;
  if (kind_ != Kind::Object) throw std::logic_error("Json::set('" + key + "') on a non-object");
  for (auto& member : members_) {
    if (member.first == key) {
      member.second = std::move(value);
      return *this;
    }
  }
  members_.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  if (kind_ == Kind::Null) kind_ = Kind::Array;
  if (kind_ != Kind::Array) throw std::logic_error("Json::push on a non-array");
  items_.push_back(std::move(value));
  return *this;
}

namespace {

void append_quoted(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void append_newline(std::string& out, int indent, int depth) {
  if (indent <= 0) return;
  out += '\n';
  out.append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
}

}  // namespace

void Json::dump_to(std::string& out, int indent, int depth) const {
  switch (kind_) {
    case Kind::Null: out += "null"; break;
    case Kind::Bool: out += b_ ? "true" : "false"; break;
    case Kind::Int: out += std::to_string(i_); break;
    case Kind::Double: {
      if (!std::isfinite(d_)) {  // JSON has no NaN or infinity
        out += "null";
        break;
      }
      std::ostringstream number;
      number << std::setprecision(17) << d_;
      out += number.str();
      break;
    }
    case Kind::String: append_quoted(out, s_); break;
    case Kind::Array: {
      if (items_.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += indent > 0 ? "," : ", ";
        append_newline(out, indent, depth + 1);
        items_[i].dump_to(out, indent, depth + 1);
      }
      append_newline(out, indent, depth);
      out += ']';
      break;
    }
    case Kind::Object: {
      if (members_.empty()) {
        out += "{}";
        break;
      }
      out += '{';
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out += indent > 0 ? "," : ", ";
        append_newline(out, indent, depth + 1);
        append_quoted(out, members_[i].first);
        out += ": ";
        members_[i].second.dump_to(out, indent, depth + 1);
      }
      append_newline(out, indent, depth);
      out += '}';
      break;
    }
  }
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

// ---- command line -------------------------------------------------------------------------

namespace {

po::options_description selection_options() {
  po::options_description selection("Backend selection (Switchyard and Megatron flags)");
  for (const auto& flag : switchyard::selection_flags()) {
    if (flag.takes_value) {
      // Composing vectors: a flag may repeat (--plugin-path a --plugin-path b); the Runtime
      // decides what repetition means.
      selection.add_options()(flag.name.c_str(),
                              po::value<std::vector<std::string>>()->composing(),
                              flag.help.c_str());
    } else {
      selection.add_options()(flag.name.c_str(), flag.help.c_str());
    }
  }
  return selection;
}

po::options_description common_options(const po::options_description& own) {
  po::options_description common("Common");
  if (!own.find_nothrow("json", false))
    common.add_options()("json", "print JSON instead of text");
  if (!own.find_nothrow("help", false))
    common.add_options()("help,h", "show this help");
  return common;
}

std::vector<std::string> long_flag_names(const po::options_description& all) {
  std::vector<std::string> names;
  for (const auto& option : all.options()) {
    const std::string name = option->long_name();
    if (!name.empty() && name[0] != '\x01') names.push_back("--" + name);  // not the hidden one
  }
  return names;
}

std::string strip_value(const std::string& token) {
  const auto equals = token.find('=');
  return token.substr(0, equals);
}

}  // namespace

bool parse_command_line(const std::string& command, const std::vector<std::string>& args,
                        po::options_description own, po::variables_map& vm,
                        RuntimeOptions& options,
                        const po::positional_options_description* positional) {
  po::options_description all;
  std::set<std::string> own_names;
  for (const auto& option : own.options()) own_names.insert(option->long_name());
  // A command may define a selection flag itself (to give it a different help); its own
  // definition wins and the flag is still passed on to the Runtime.
  po::options_description selection("Backend selection (Switchyard and Megatron flags)");
  {
    po::options_description every_selection = selection_options();
    for (const auto& option : every_selection.options())
      if (!own_names.count(option->long_name())) selection.add(option);
  }
  all.add(own).add(selection).add(common_options(own));

  // Positional arguments beyond what the command takes are collected under a hidden name,
  // so that the error can quote exactly the extra ones.
  constexpr const char* kExtra = "\x01extra";
  all.add_options()(kExtra, po::value<std::vector<std::string>>());
  po::positional_options_description positions;
  const unsigned taken = positional ? positional->max_total_count() : 0;
  const bool unbounded = taken == std::numeric_limits<unsigned>::max();
  for (unsigned i = 0; i < taken && !unbounded; ++i)
    positions.add(positional->name_for_position(i).c_str(), 1);
  if (unbounded)
    positions = *positional;
  else
    positions.add(kExtra, -1);
  // Strict: no abbreviations ("--cross-entropy" must never be guessed to mean
  // "--cross-entropy-fusion-impl"), and no single-dash long options ("-json").
  const int style = po::command_line_style::default_style &
                    ~po::command_line_style::allow_guessing;
  try {
    po::parsed_options parsed = po::command_line_parser(args)
                                    .options(all)
                                    .positional(positions)
                                    .style(style)
                                    .run();
    po::store(parsed, vm);
    if (vm.count(kExtra)) {
      std::string extra;
      for (const auto& arg : vm[kExtra].as<std::vector<std::string>>())
        extra += (extra.empty() ? "'" : ", '") + arg + "'";
      report_error(command, "unexpected argument " + extra + "; run 'switchyard " + command +
                                " --help' for the usage",
                   2);
      return false;
    }
    po::notify(vm);
    std::set<std::string> selection_names;
    for (const auto& flag : switchyard::selection_flags()) selection_names.insert(flag.name);
    for (const auto& option : parsed.options) {
      if (option.position_key != -1 || !selection_names.count(option.string_key)) continue;
      if (!option.original_tokens.empty()) {
        options.args.insert(options.args.end(), option.original_tokens.begin(),
                            option.original_tokens.end());
      } else {
        options.args.push_back("--" + option.string_key);
        options.args.insert(options.args.end(), option.value.begin(), option.value.end());
      }
    }
    return true;
  } catch (const po::unknown_option& e) {
    const std::string flag = strip_value(e.get_option_name());
    report_error(command, "unknown option '" + flag + "'" +
                              did_you_mean(flag, long_flag_names(all)) +
                              "; run 'switchyard " + command + " --help' for the options",
                 2);
  } catch (const po::error& e) {
    report_error(command, std::string(e.what()) + "; run 'switchyard " + command +
                              " --help' for the options",
                 2);
  }
  return false;
}

void print_command_help(std::ostream& out, const std::string& command,
                        const std::string& synopsis, const po::options_description& own) {
  out << "usage: switchyard " << command;
  if (!synopsis.empty()) out << ' ' << synopsis;
  out << "\n\n";
  if (!own.options().empty()) out << own << '\n';
  std::set<std::string> own_names;
  for (const auto& option : own.options()) own_names.insert(option->long_name());
  po::options_description selection("Backend selection (Switchyard and Megatron flags)");
  {
    po::options_description every_selection = selection_options();
    for (const auto& option : every_selection.options())
      if (!own_names.count(option->long_name())) selection.add(option);
  }
  if (!selection.options().empty()) out << selection << '\n';
  const po::options_description common = common_options(own);
  if (!common.options().empty()) out << common;
}

int report_error(const std::string& command, const std::string& message, int code) {
  std::cerr << "switchyard" << (command.empty() ? "" : " " + command) << ": error: " << message;
  if (message.empty() || message.back() != '\n') std::cerr << '\n';
  std::cerr.flush();
  return code;
}

// ---- Progress ---------------------------------------------------------------------------------

Progress::Progress(std::string label, int64_t total, bool quiet)
    : label_(std::move(label)), total_(total), enabled_(!quiet && ::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  if (!finished_) finish();
}

void Progress::update(int64_t done, const std::string& note) {
  if (!enabled_ || finished_) return;
  constexpr int kBarWidth = 30;
  std::string line = "\r" + label_ + ": ";
  if (total_ > 0) {
    const int64_t clamped = std::clamp<int64_t>(done, 0, total_);
    const int filled = static_cast<int>(clamped * kBarWidth / total_);
    line += '[' + std::string(static_cast<size_t>(filled), '#') +
            std::string(static_cast<size_t>(kBarWidth - filled), '.') + "] " +
            std::to_string(clamped * 100 / total_) + "%";
  } else if (done > 0) {
    line += std::to_string(done);  // unknown total: a running count
  }
  if (!note.empty()) line += (line.back() == ' ' ? "" : "  ") + one_line(note);
  line += "\033[K";  // erase what a longer previous line left behind
  std::cerr << line << std::flush;
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_) std::cerr << "\r\033[K" << std::flush;
}

}  // namespace switchyard::cli
