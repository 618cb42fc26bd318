#include "bench_runner.hpp"

#include <chrono>
#include <cstring>

extern char** environ;

namespace switchyard::test {

JsonValue read_json(const std::string& path) { return parse_json(read_text(path)); }

RunResult run_program(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "SWITCHYARD_", 11) != 0) environment.emplace_back(*e);
  RunResult result = run_process(program, args, environment, std::chrono::seconds(120));
  if (result.timed_out) result.err = "killed after 120 s\n" + result.err;
  return result;
}

RunResult run_bench(const std::vector<std::string>& args) {
  return run_program(SWITCHYARD_TEST_BENCH_EXECUTABLE, args);
}

std::string python() { return SWITCHYARD_TEST_PYTHON; }

std::string bench_script(const std::string& name) {
  return std::string(SWITCHYARD_TEST_BENCH_SOURCE_DIR) + "/" + name;
}

}  // namespace switchyard::test
