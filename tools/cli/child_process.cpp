#include "child_process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace switchyard::cli {

namespace {

void write_all(int fd, const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    written += static_cast<size_t>(n);
  }
}

// Reads `fd` until end of file or `deadline`; true when the deadline passed first.
bool read_until_eof(int fd, std::chrono::steady_clock::time_point deadline, std::string& out) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return true;
    pollfd descriptor{fd, POLLIN, 0};
    const int ready = ::poll(&descriptor, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return true;
    if (ready < 0) return false;
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

ChildResult run_in_child(const std::function<std::string()>& work, std::chrono::milliseconds timeout) {
  ChildResult result;
  int fds[2];
  if (::pipe(fds) != 0) {
    result.error = std::string("could not create a pipe to a child process: ") + std::strerror(errno);
    return result;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    result.error = std::string("could not fork a child process: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return result;
  }
  if (child == 0) {
    ::close(fds[0]);
    int status = 0;
    try {
      write_all(fds[1], work());
    } catch (...) {
      status = 1;
    }
    ::_exit(status);
  }
  ::close(fds[1]);
  result.timed_out =
      read_until_eof(fds[0], std::chrono::steady_clock::now() + timeout, result.output);
  ::close(fds[0]);
  if (result.timed_out) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!result.timed_out && WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string signal_text(int signal_number) {
  const char* name = ::strsignal(signal_number);
  return "signal " + std::to_string(signal_number) + (name != nullptr ? std::string(", ") + name : "");
}

}  // namespace switchyard::cli
