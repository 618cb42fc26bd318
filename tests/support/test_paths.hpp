// Where the build put things, for tests that load real .so files or run the CLI.
#ifndef SWITCHYARD_TEST_PATHS_HPP
#define SWITCHYARD_TEST_PATHS_HPP

#include <string>

namespace switchyard::test {

std::string build_dir();    // the CMake binary dir
std::string source_dir();   // the repository root
std::string plugin_dir();   // <build>/lib/switchyard/plugins (the default system folder)
std::string fixture_dir();  // <build>/tests/fixtures: fixture plugins, one folder per case
std::string bin_dir();      // where the `switchyard` executable is

}  // namespace switchyard::test

#endif
