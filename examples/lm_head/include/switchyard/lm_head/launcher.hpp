// Starts the ranks of a multi-process job as child processes of this one and supervises them:
// `switchyard train --device cuda --tp N` runs one process per GPU. The launcher knows
// nothing about training; it execs a program N times, forwards what the ranks print, and
// when one rank fails it stops the others (a rank whose peer died waits in a collective
// forever) and says which rank failed first and how.
#ifndef SWITCHYARD_LM_HEAD_LAUNCHER_HPP
#define SWITCHYARD_LM_HEAD_LAUNCHER_HPP

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::lm_head {

struct LaunchSpec {
  // The program every rank runs (/proc/self/exe to re-run this binary) and, per rank, its
  // argv[0] and the arguments after it. The number of ranks is arguments.size().
  std::string executable;
  std::string argv0;
  std::vector<std::vector<std::string>> arguments;
  // Variables set in every rank's environment (on top of this process's, overriding it).
  std::vector<std::pair<std::string, std::string>> environment;
  // Rank 0's stdout: passed through to this process's stdout (false), or collected and
  // returned in LaunchResult::rank0_stdout (true), so that the caller decides whether it is
  // printed. Rank 0's stderr is always this process's stderr (a progress line stays on the
  // terminal). The other ranks' stdout goes to /dev/null; their stderr is read line by line,
  // forwarded to `rank_stderr` as "[rank r] <line>" and its last lines kept for the report.
  bool capture_rank0_stdout = false;
  std::ostream* rank_stderr = nullptr;  // nullptr: std::cerr
  // After the first failure, how long the other ranks get to finish on their own (they often
  // fail the same way and report it themselves) before they are sent SIGTERM, and how long
  // after SIGTERM before SIGKILL.
  int failure_grace_ms = 1000;
  int stop_grace_ms = 5000;
};

struct RankExit {
  int32_t rank = 0;
  int exit_code = -1;   // -1 when killed by a signal or never started
  int signal = 0;       // the signal that ended it, 0 when it exited
  bool started = false;        // false: fork or exec failed (start_error says why)
  bool stopped = false;        // the launcher sent it SIGTERM/SIGKILL after another rank failed
  std::string start_error;
  std::vector<std::string> stderr_tail;  // last lines of its stderr (not kept for rank 0)

  bool succeeded() const { return started && signal == 0 && exit_code == 0; }
  // "exited with code 1", "was killed by signal 11 (Segmentation fault)", "could not be
  // started: ...", "was stopped (SIGTERM) after rank 1 failed".
  std::string how_it_ended() const;
};

struct LaunchResult {
  std::vector<RankExit> ranks;
  int32_t first_failure = -1;  // the rank that failed first, -1 when all succeeded
  std::string rank0_stdout;    // with LaunchSpec::capture_rank0_stdout

  bool succeeded() const { return first_failure < 0; }
  // Which rank failed first and how, with its last stderr line, and what happened to the
  // others: "rank 1 of 2 exited with code 1: <last line>; rank 0 was stopped (SIGTERM)".
  std::string failure_message() const;
};

// Runs the ranks and returns when all of them have ended. Throws switchyard::Error
// (SY_ERR_INVALID_ARGUMENT) for a spec without ranks; a rank that cannot be started is a
// failure in the result, not an exception.
LaunchResult launch_ranks(const LaunchSpec& spec);

}  // namespace switchyard::lm_head

#endif
