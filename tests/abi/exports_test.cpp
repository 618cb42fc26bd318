// Every built plugin (the loader's fixtures and whatever is in the plugin folder) exports
// exactly one symbol of its own: sy_plugin_v1. Checked with `nm -D --defined-only`.
#include "test_paths.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

bool is_elf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 4> magic{};
  in.read(magic.data(), magic.size());
  return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' &&
         magic[3] == 'F';
}

std::vector<fs::path> plugin_files(const std::string& root) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return files;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("libswitchyard-", 0) == 0 && it->path().extension() == ".so" &&
        it->is_regular_file() && is_elf(it->path()))
      files.push_back(it->path());
  }
  return files;
}

// The defined dynamic symbols of `path`; "nm failed: ..." in *error when nm fails.
std::set<std::string> exported_symbols(const fs::path& path, std::string* error) {
  const std::string command = "nm -D --defined-only '" + path.string() + "' 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), &pclose);
  std::set<std::string> symbols;
  if (!pipe) {
    *error = "cannot run: " + command;
    return symbols;
  }
  std::string output;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0) output.append(buffer.data(), n);
  const int status = pclose(pipe.release());
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (fields >> address >> type >> name) symbols.insert(name);
  }
  // nm says "no symbols" (status 0 or 1 depending on version) for a library exporting none.
  if (status != 0 && output.find("no symbols") == std::string::npos)
    *error = "nm failed: " + output;
  return symbols;
}

}  // namespace

TEST_CASE("every plugin exports sy_plugin_v1 and nothing else of its own") {
  std::vector<fs::path> files = plugin_files(switchyard::test::fixture_dir());
  REQUIRE_MESSAGE(files.size() >= 10,
                  "expected the loader's fixture plugins under " << switchyard::test::fixture_dir());
  for (const fs::path& file : plugin_files(switchyard::test::plugin_dir())) files.push_back(file);

  for (const fs::path& file : files) {
    INFO(file.string());
    std::string error;
    const std::set<std::string> symbols = exported_symbols(file, &error);
    CHECK(error.empty());
    if (file.filename() == "libswitchyard-no_entry.so") {
      CHECK(symbols.empty());  // the fixture that deliberately has no entry
    } else {
      CHECK(symbols == std::set<std::string>{"sy_plugin_v1"});
    }
  }
}
