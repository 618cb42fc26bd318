#include "run_process.hpp"

#include "temp_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace switchyard::test {
namespace {

// What the child wrote; "" when it failed before opening the file.
std::string output_of(const std::string& path) {
  try {
    return read_text(path);
  } catch (const std::runtime_error&) {
    return {};
  }
}

}  // namespace

ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const std::vector<std::string>& environment,
                          std::chrono::seconds time_limit) {
  // Output goes to files rather than pipes: a chatty child never blocks on a full pipe.
  TempDir scratch;
  const std::string out_path = scratch / "stdout", err_path = scratch / "stderr";

  std::vector<std::string> argv_strings = {program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings = environment;
  std::vector<char*> argv, envp;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed: " + std::string(std::strerror(errno)));
  if (child == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execve(program.c_str(), argv.data(), envp.data());
    const char message[] = "execve failed: the program could not be started\n";
    (void)!::write(2, message, sizeof message - 1);
    ::_exit(127);
  }

  ProcessResult result;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + time_limit;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) throw std::runtime_error("waitpid failed");
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = output_of(out_path);
  result.err = output_of(err_path);
  return result;
}

}  // namespace switchyard::test
