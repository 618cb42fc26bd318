// The CLI's own output helpers: strict flag parsing, help, error lines and spelling
// suggestions. Tables, JSON and the progress line live in tools/support.
#include "output.hpp"

#include <boost/program_options/errors.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/value_semantic.hpp>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <limits>
#include <set>

namespace po = boost::program_options;

namespace switchyard::cli {

// ---- spelling suggestions -------------------------------------------------------------------

namespace {

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

// ---- command line -------------------------------------------------------------------------

namespace {

// The selection flags a command does not define itself. A command may define one (to give it
// a different help); its own definition wins and the flag is still passed on to the Runtime.
po::options_description selection_options(const po::options_description& own) {
  po::options_description selection("Backend selection (Switchyard and Megatron flags)");
  for (const auto& flag : switchyard::selection_flags()) {
    if (own.find_nothrow(flag.name, false)) continue;
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
  all.add(own).add(selection_options(own)).add(common_options(own));

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
  const po::options_description selection = selection_options(own);
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

}  // namespace switchyard::cli
