// Runs the built `switchyard` binary in a controlled environment and captures what it wrote.
#ifndef SWITCHYARD_TESTS_CLI_RUNNER_HPP
#define SWITCHYARD_TESTS_CLI_RUNNER_HPP

#include "run_process.hpp"
#include "temp_dir.hpp"

#include <map>
#include <string>
#include <vector>

namespace switchyard::test {

using CliResult = ProcessResult;

// Runs `switchyard <args>` with an environment of only PATH, HOME (an empty temp folder
// unless `env` sets it), SWITCHYARD_PLUGIN_SYSTEM_PATH (an empty temp folder unless `env`
// sets it, so the build's real plugins never leak in) and `env`. A run longer than
// 60 s is killed.
CliResult run_cli(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {});

// The folder of one fixture plugin (<build>/tests/fixtures/<name>) and its file.
std::string fixture_folder(const std::string& name);
std::string fixture_file(const std::string& name);

// Lines of `text`.
std::vector<std::string> lines_of(const std::string& text);

// The value of the first "key  value" line (after leading blanks) whose key is `key`, or
// "<missing key>" when there is none.
std::string field(const std::string& text, const std::string& key);

// A table printed by the CLI: the header row (found by its first column name) and the rows
// under the dashed rule, up to the first blank line. Throws when a row's cells do not start
// at the header's column offsets.
struct ParsedTable {
  std::vector<std::string> headers;
  std::vector<std::map<std::string, std::string>> rows;  // header -> cell
};
std::vector<ParsedTable> tables_in(const std::string& text, const std::string& first_header);

}  // namespace switchyard::test

#endif
