// Runs the built switchyard-bench (or python3 on the bench's scripts) and captures its output.
#ifndef SWITCHYARD_TESTS_BENCH_RUNNER_HPP
#define SWITCHYARD_TESTS_BENCH_RUNNER_HPP

#include "mini_json.hpp"

#include <string>
#include <vector>

namespace switchyard::test {

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal or the timeout
  std::string out, err;
};

// A fresh folder under /tmp, removed with everything in it when this goes out of scope.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs `program args...` with this process's environment minus every SWITCHYARD_* variable
// (so a developer's settings never leak in). Killed after 120 s.
RunResult run_program(const std::string& program, const std::vector<std::string>& args);

// switchyard-bench with `args`.
RunResult run_bench(const std::vector<std::string>& args);

// The python3 CMake found, or "" when none (tests that need it are skipped).
std::string python();
// bench/<name> in the source tree.
std::string bench_script(const std::string& name);

std::string read_text(const std::string& path);
JsonValue read_json(const std::string& path);

}  // namespace switchyard::test

#endif
