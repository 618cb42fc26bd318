// Runs a program as a child process with exactly the environment given, stdin from /dev/null,
// and captures its exit and what it wrote to stdout and stderr (separately).
#ifndef SWITCHYARD_TESTS_RUN_PROCESS_HPP
#define SWITCHYARD_TESTS_RUN_PROCESS_HPP

#include <chrono>
#include <string>
#include <vector>

namespace switchyard::test {

struct ProcessResult {
  int exit_code = -1;      // -1 when killed by a signal (or the time limit)
  int signal = 0;          // the signal that killed it, 0 when it exited
  bool timed_out = false;  // killed (SIGKILL) for running past the time limit
  std::string out, err;    // stdout and stderr, separately
};

// `environment` holds "NAME=value" strings. A child that cannot exec the program exits 127
// after saying so on stderr.
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const std::vector<std::string>& environment,
                          std::chrono::seconds time_limit);

}  // namespace switchyard::test

#endif
