#include "cli_runner.hpp"

#include "test_paths.hpp"

#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace switchyard::test {

namespace fs = std::filesystem;

CliResult run_cli(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env) {
  TempDir scratch;
  fs::create_directory(scratch / "home");
  fs::create_directory(scratch / "system-plugins");
  std::map<std::string, std::string> environment = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin"},
      {"HOME", scratch / "home"},
      {"SWITCHYARD_PLUGIN_SYSTEM_PATH", scratch / "system-plugins"},
  };
  for (const auto& [key, value] : env) environment[key] = value;
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : environment) env_strings.push_back(key + "=" + value);
  return run_process(bin_dir() + "/switchyard", args, env_strings, std::chrono::seconds(60));
}

std::string fixture_folder(const std::string& name) { return fixture_dir() + "/" + name; }
std::string fixture_file(const std::string& name) {
  return fixture_folder(name) + "/libswitchyard-" + name + ".so";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string field(const std::string& text, const std::string& key) {
  for (const auto& line : lines_of(text)) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos || line.compare(start, key.size(), key) != 0) continue;
    const size_t after = start + key.size();
    if (after < line.size() && line.compare(after, 2, "  ") != 0) continue;  // a longer key
    const auto value = line.find_first_not_of(' ', after);
    return value == std::string::npos ? std::string() : line.substr(value);
  }
  return "<missing " + key + ">";
}

std::vector<ParsedTable> tables_in(const std::string& text, const std::string& first_header) {
  std::vector<ParsedTable> tables;
  const auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& header = lines[i];
    const auto first = header.find_first_not_of(' ');
    if (first == std::string::npos || header.compare(first, first_header.size(), first_header) != 0)
      continue;
    // Column starts: each header word preceded by at least two blanks (or the line start).
    std::vector<size_t> starts;
    ParsedTable table;
    for (size_t p = first; p < header.size();) {
      const size_t end = header.find("  ", p);
      table.headers.push_back(header.substr(p, end == std::string::npos ? std::string::npos : end - p));
      starts.push_back(p);
      if (end == std::string::npos) break;
      p = header.find_first_not_of(' ', end);
      if (p == std::string::npos) break;
    }
    if (i + 1 >= lines.size() || lines[i + 1].find("--") == std::string::npos)
      throw std::runtime_error("table header without a dashed rule: " + header);
    for (size_t r = i + 2; r < lines.size() && !lines[r].empty(); ++r) {
      const std::string& row = lines[r];
      std::map<std::string, std::string> cells;
      for (size_t c = 0; c < starts.size(); ++c) {
        if (row.size() <= starts[c]) {  // trailing empty cells are not printed
          cells[table.headers[c]] = "";
          continue;
        }
        if (row[starts[c]] == ' ' || (starts[c] > 0 && row[starts[c] - 1] != ' '))
          throw std::runtime_error("column '" + table.headers[c] + "' of row '" + row +
                                   "' does not start at offset " + std::to_string(starts[c]) +
                                   " like its header '" + header + "'");
        const size_t end = c + 1 < starts.size() ? starts[c + 1] : std::string::npos;
        std::string cell = row.substr(starts[c], end == std::string::npos ? end : end - starts[c]);
        cell.erase(cell.find_last_not_of(' ') + 1);
        cells[table.headers[c]] = cell;
      }
      table.rows.push_back(std::move(cells));
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

}  // namespace switchyard::test
