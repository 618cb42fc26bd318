// Runs the built switchyard-bench (or python3 on the bench's scripts) and captures its output.
#ifndef SWITCHYARD_TESTS_BENCH_RUNNER_HPP
#define SWITCHYARD_TESTS_BENCH_RUNNER_HPP

#include "mini_json.hpp"
#include "run_process.hpp"
#include "temp_dir.hpp"

#include <string>
#include <vector>

namespace switchyard::test {

using RunResult = ProcessResult;
using ScratchDir = TempDir;

// Runs `program args...` with this process's environment minus every SWITCHYARD_* variable
// (so a developer's settings never leak in). Killed after 120 s ("killed after 120 s" starts
// its err then).
RunResult run_program(const std::string& program, const std::vector<std::string>& args);

// switchyard-bench with `args`.
RunResult run_bench(const std::vector<std::string>& args);

// The python3 CMake found, or "" when none (tests that need it are skipped).
std::string python();
// bench/<name> in the source tree.
std::string bench_script(const std::string& name);

JsonValue read_json(const std::string& path);

}  // namespace switchyard::test

#endif
