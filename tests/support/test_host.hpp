// A sy_host for the plugin suites: each plugin answered its options from a map, and every line
// it logs kept as "LEVEL [plugin] message" (LEVEL: TRACE, DEBUG, INFO, WARN, ERROR). The host's
// callbacks are plain C functions, so there is one host per test binary.
#ifndef SWITCHYARD_TESTS_TEST_HOST_HPP
#define SWITCHYARD_TESTS_TEST_HOST_HPP

#include <switchyard/abi.h>

#include <map>
#include <string>
#include <vector>

namespace switchyard::test {

const sy_host* test_host();

// Replaces the options `plugin` is answered (key -> value); an empty map answers none. An
// answer stays valid until the next call for that plugin.
void set_host_options(const std::string& plugin, std::map<std::string, std::string> options);

std::vector<std::string> host_log_lines();
void clear_host_log_lines();

}  // namespace switchyard::test

#endif
