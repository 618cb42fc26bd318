#include "test_paths.hpp"

namespace switchyard::test {

std::string build_dir() { return SWITCHYARD_TEST_BUILD_DIR; }
std::string source_dir() { return SWITCHYARD_TEST_SOURCE_DIR; }
std::string plugin_dir() { return SWITCHYARD_TEST_PLUGIN_DIR; }
std::string fixture_dir() { return SWITCHYARD_TEST_FIXTURE_DIR; }
std::string bin_dir() { return SWITCHYARD_TEST_BIN_DIR; }

}  // namespace switchyard::test
