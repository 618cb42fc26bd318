// Output helpers shared by the commands: aligned tables for people, JSON for programs, and
// the parsing of selection flags next to a command's own flags.
#ifndef SWITCHYARD_CLI_OUTPUT_HPP
#define SWITCHYARD_CLI_OUTPUT_HPP

#include <switchyard/switchyard.hpp>

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

// Columns aligned to the widest cell; the header row is underlined.
class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void add(std::vector<std::string> row);
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// A small JSON value: null, bool, number, string, array, object (keys keep insertion order).
class Json {
 public:
  Json();  // null
  Json(bool b);
  Json(int v);
  Json(int64_t v);
  Json(double v);
  Json(const char* s);
  Json(std::string s);
  static Json array();
  static Json object();

  Json& set(const std::string& key, Json value);  // objects
  Json& push(Json value);                         // arrays
  std::string dump(int indent = 2) const;

 private:
  enum class Kind { Null, Bool, Int, Double, String, Array, Object } kind_ = Kind::Null;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
  void dump_to(std::string& out, int indent, int depth) const;
};

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

// A single line "label: [####......] 42%" rewritten in place on a terminal (stderr), for
// anything that runs longer than a second. Silent when stderr is not a terminal or when
// quiet is set.
class Progress {
 public:
  Progress(std::string label, int64_t total, bool quiet = false);
  ~Progress();
  void update(int64_t done, const std::string& note = "");
  void finish();

 private:
  std::string label_;
  int64_t total_;
  bool enabled_;
  bool finished_ = false;
};

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
