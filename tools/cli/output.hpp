// Output helpers shared by the commands: aligned tables for people, JSON for programs, a
// progress line (all three from tools/support), the parsing of selection flags next to a
// command's own flags, error lines, help and spelling suggestions.
#ifndef SWITCHYARD_CLI_OUTPUT_HPP
#define SWITCHYARD_CLI_OUTPUT_HPP

#include <switchyard/switchyard.hpp>
#include <switchyard/tools/json.hpp>
#include <switchyard/tools/progress.hpp>
#include <switchyard/tools/table.hpp>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/variables_map.hpp>

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace switchyard::cli {

// Tables, JSON and the progress line are the tools' shared ones (tools/support); these names
// keep the commands' spelling.
using tools::Json;
using tools::Progress;
using tools::Table;

// Strict parsing of a command's flags plus the selection flags (switchyard::selection_flags
// and --json). Unknown flags are an error with a did-you-mean. On success fills `vm`, and
// `options.args` receives every selection flag as given, for the Runtime.
// Returns false (after printing the error to stderr) on a bad command line.
bool parse_command_line(const std::string& command, const std::vector<std::string>& args,
                        boost::program_options::options_description own,
                        boost::program_options::variables_map& vm, RuntimeOptions& options,
                        const boost::program_options::positional_options_description* positional =
                            nullptr);

// Prints "switchyard <command>: error: <message>" to stderr; returns the exit code to use.
int report_error(const std::string& command, const std::string& message, int code = 1);

// ---- added for the commands' help and suggestions ------------------------------------------

// Prints "usage: switchyard <command> <synopsis>", the command's own options, the selection
// flags and the common flags (--json, --help/-h) — everything parse_command_line accepts.
// parse_command_line does not print help: a command checks vm.count("help"), calls this and
// returns 0.
void print_command_help(std::ostream& out, const std::string& command,
                        const std::string& synopsis,
                        const boost::program_options::options_description& own);

// The candidate closest to `word` (case-insensitive edit distance, or a prefix), or "" when
// none is close enough to be a plausible typo.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — ready to append to a message.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace switchyard::cli

#endif
