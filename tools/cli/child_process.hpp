// Work run in a forked child that writes its answer to a pipe, so that what crashes or hangs in
// it (a CUDA driver, a plugin's code) cannot take the command down with it. The caller must not
// have initialised CUDA (unusable in a forked child) nor hold locks another thread could need
// (the CLI runs single-threaded when it calls this).
#ifndef SWITCHYARD_CLI_CHILD_PROCESS_HPP
#define SWITCHYARD_CLI_CHILD_PROCESS_HPP

#include <chrono>
#include <functional>
#include <string>

namespace switchyard::cli {

struct ChildResult {
  std::string output;      // what `work` returned, as far as it reached this process
  bool timed_out = false;  // still running after the timeout: killed with SIGKILL
  int signal = 0;          // the signal that ended the child otherwise, 0 when it exited
  std::string error;       // the child could not be started (no pipe, no fork); empty otherwise
};

// Runs `work` in a forked child and returns what it returned. The child leaves with _exit():
// no atexit handler or static destructor of this process's state runs there. An exception
// from `work` ends the child with an empty answer.
ChildResult run_in_child(const std::function<std::string()>& work, std::chrono::milliseconds timeout);

// "signal 11, Segmentation fault".
std::string signal_text(int signal_number);

}  // namespace switchyard::cli

#endif
