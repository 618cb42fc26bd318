// The rank launcher: fork + exec per rank, one poll loop that forwards the ranks' output and
// reaps them, and the stop sequence once a rank has failed.
#include <switchyard/lm_head/launcher.hpp>

#include <switchyard/switchyard.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace switchyard::lm_head {
namespace {

using Clock = std::chrono::steady_clock;

// Lines of a rank's stderr kept for the failure report.
constexpr size_t kTailLines = 20;

// Strings and the NULL-terminated char* array execve wants, built before fork: between fork
// and exec the child may only make async-signal-safe calls, so it must not allocate.
class CStringArray {
 public:
  explicit CStringArray(std::vector<std::string> strings) : strings_(std::move(strings)) {
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  char* const* get() { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

std::vector<std::string> child_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::set<std::string> overridden;
  for (const auto& [name, value] : overrides) overridden.insert(name);
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (overridden.count(text.substr(0, text.find('='))) == 0) env.push_back(text);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read, write;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(SY_ERR_INTERNAL, std::string("launcher: pipe2 failed: ") + std::strerror(errno));
  }
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

// One rank while it runs.
struct Child {
  pid_t pid = -1;
  bool running = false;
  Fd stdout_read;  // rank 0 with capture_rank0_stdout
  Fd stderr_read;  // ranks >= 1
  std::string partial_line;
  int signal_sent = 0;
};

void keep_line(RankExit& exit, std::ostream& forward, const std::string& line) {
  forward << "[rank " << exit.rank << "] " << line << '\n';
  exit.stderr_tail.push_back(line);
  if (exit.stderr_tail.size() > kTailLines) exit.stderr_tail.erase(exit.stderr_tail.begin());
}

// Reads what is available on a non-blocking fd; closes it at end of file. Returns the bytes.
std::string read_available(Fd& fd) {
  std::string data;
  char buffer[4096];
  while (fd.open()) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got > 0) {
      data.append(buffer, static_cast<size_t>(got));
    } else if (got == 0) {
      fd.reset();
    } else if (errno == EINTR) {
      continue;
    } else {
      if (errno != EAGAIN && errno != EWOULDBLOCK) fd.reset();
      break;
    }
  }
  return data;
}

void consume_stderr(Child& child, RankExit& exit, std::ostream& forward) {
  child.partial_line += read_available(child.stderr_read);
  size_t newline;
  while ((newline = child.partial_line.find('\n')) != std::string::npos) {
    keep_line(exit, forward, child.partial_line.substr(0, newline));
    child.partial_line.erase(0, newline + 1);
  }
  if (!child.stderr_read.open() && !child.partial_line.empty()) {
    keep_line(exit, forward, child.partial_line);
    child.partial_line.clear();
  }
}

void set_non_blocking(const Fd& fd) {
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK);
}

// Forks and execs one rank. Fills `exit` with the reason when it cannot be started.
void start_rank(const LaunchSpec& spec, int32_t rank, char* const* envp, const Fd& dev_null,
                Child& child, RankExit& exit) {
  std::vector<std::string> argv_strings{spec.argv0.empty() ? spec.executable : spec.argv0};
  const auto& args = spec.arguments[static_cast<size_t>(rank)];
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  CStringArray argv(std::move(argv_strings));

  Pipe exec_status = make_pipe();  // closed by exec; carries errno when exec fails
  Pipe output;
  const bool capture_stdout = rank == 0 && spec.capture_rank0_stdout;
  if (capture_stdout || rank != 0) output = make_pipe();
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    exit.start_error = std::string("fork failed: ") + std::strerror(errno);
    return;
  }
  if (pid == 0) {
    // The child: async-signal-safe calls only, up to exec.
    // If this process dies, the rank must not outlive it waiting in a collective.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(dev_null.get(), STDIN_FILENO);
    if (rank == 0) {
      if (capture_stdout) ::dup2(output.write.get(), STDOUT_FILENO);
    } else {
      ::dup2(dev_null.get(), STDOUT_FILENO);
      ::dup2(output.write.get(), STDERR_FILENO);
    }
    ::execve(spec.executable.c_str(), argv.get(), envp);
    const int error = errno;
    [[maybe_unused]] const ssize_t ignored =
        ::write(exec_status.write.get(), &error, sizeof error);
    ::_exit(127);
  }

  exec_status.write.reset();
  output.write.reset();
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(exec_status.read.get(), &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    exit.start_error = "exec " + spec.executable + " failed: " + std::strerror(exec_errno);
    return;
  }
  exit.started = true;
  child.pid = pid;
  child.running = true;
  if (capture_stdout) {
    child.stdout_read = std::move(output.read);
    set_non_blocking(child.stdout_read);
  } else if (rank != 0) {
    child.stderr_read = std::move(output.read);
    set_non_blocking(child.stderr_read);
  }
}

void record_status(int status, RankExit& exit) {
  if (WIFEXITED(status)) {
    exit.exit_code = WEXITSTATUS(status);
    exit.signal = 0;
  } else if (WIFSIGNALED(status)) {
    exit.exit_code = -1;
    exit.signal = WTERMSIG(status);
  }
}

std::string signal_text(int signal) {
  const char* name = ::strsignal(signal);
  return "signal " + std::to_string(signal) + (name != nullptr ? std::string(" (") + name + ")" : "");
}

// The line of a rank's stderr that best says why it failed: the last one with "error:",
// else the last non-empty one.
std::string telling_line(const std::vector<std::string>& tail) {
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) {
    if (it->find("error:") != std::string::npos) return *it;
  }
  for (auto it = tail.rbegin(); it != tail.rend(); ++it) {
    if (it->find_first_not_of(" \t\r") != std::string::npos) return *it;
  }
  return {};
}

}  // namespace

std::string RankExit::how_it_ended() const {
  if (!started) return "could not be started: " + start_error;
  if (stopped) {
    return signal != 0 ? "was stopped (" + signal_text(signal) + ")"
                       : "was stopped and exited with code " + std::to_string(exit_code);
  }
  if (signal != 0) return "was killed by " + signal_text(signal);
  return "exited with code " + std::to_string(exit_code);
}

std::string LaunchResult::failure_message() const {
  if (succeeded()) return {};
  const std::string world = std::to_string(ranks.size());
  const RankExit& first = ranks[static_cast<size_t>(first_failure)];
  std::string message = "rank " + std::to_string(first.rank) + " of " + world + " " +
                        first.how_it_ended();
  const std::string line = telling_line(first.stderr_tail);
  if (!line.empty()) {
    message += ": " + line;
  } else if (first.rank == 0 && first.started && first.signal == 0) {
    message += " (its own message is printed above)";
  }
  std::string stopped;
  for (const RankExit& other : ranks) {
    if (other.rank == first.rank || other.succeeded()) continue;
    if (other.stopped) {
      stopped += (stopped.empty() ? "" : ", ") + std::to_string(other.rank);
      continue;
    }
    message += "; rank " + std::to_string(other.rank) + " " + other.how_it_ended();
    const std::string other_line = telling_line(other.stderr_tail);
    if (!other_line.empty()) message += ": " + other_line;
  }
  if (!stopped.empty()) {
    message += "; the launcher stopped rank" + std::string(stopped.find(',') != std::string::npos
                                                               ? "s "
                                                               : " ") +
               stopped + " (a rank whose peer has ended waits in its collectives forever)";
  }
  return message;
}

LaunchResult launch_ranks(const LaunchSpec& spec) {
  if (spec.arguments.empty()) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "launch_ranks: no ranks; expected one argument list per rank.");
  }
  const int32_t world = static_cast<int32_t>(spec.arguments.size());
  std::ostream& forward = spec.rank_stderr != nullptr ? *spec.rank_stderr : std::cerr;
  LaunchResult result;
  result.ranks.resize(static_cast<size_t>(world));
  std::vector<Child> children(static_cast<size_t>(world));
  for (int32_t r = 0; r < world; ++r) result.ranks[static_cast<size_t>(r)].rank = r;

  CStringArray envp(child_environment(spec.environment));
  Fd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null.open()) {
    throw Error(SY_ERR_INTERNAL,
                std::string("launcher: cannot open /dev/null: ") + std::strerror(errno));
  }

  std::optional<Clock::time_point> stop_at, kill_at;
  auto note_failure = [&](int32_t rank) {
    if (result.first_failure >= 0) return;
    result.first_failure = rank;
    stop_at = Clock::now() + std::chrono::milliseconds(spec.failure_grace_ms);
  };

  for (int32_t r = 0; r < world; ++r) {
    RankExit& exit = result.ranks[static_cast<size_t>(r)];
    start_rank(spec, r, envp.get(), dev_null, children[static_cast<size_t>(r)], exit);
    if (!exit.started) {
      note_failure(r);
      for (int32_t later = r + 1; later < world; ++later) {
        result.ranks[static_cast<size_t>(later)].start_error =
            "not started, because rank " + std::to_string(r) + " could not be";
      }
      break;
    }
  }

  auto any_running = [&] {
    return std::any_of(children.begin(), children.end(), [](const Child& c) { return c.running; });
  };
  auto read_outputs = [&] {
    for (int32_t r = 0; r < world; ++r) {
      Child& child = children[static_cast<size_t>(r)];
      if (child.stdout_read.open()) result.rank0_stdout += read_available(child.stdout_read);
      if (child.stderr_read.open()) consume_stderr(child, result.ranks[static_cast<size_t>(r)], forward);
    }
  };
  auto signal_running = [&](int signal) {
    for (int32_t r = 0; r < world; ++r) {
      Child& child = children[static_cast<size_t>(r)];
      if (!child.running) continue;
      ::kill(child.pid, signal);
      child.signal_sent = signal;
    }
  };

  while (any_running()) {
    std::vector<pollfd> fds;
    for (const Child& child : children) {
      if (child.stdout_read.open()) fds.push_back({child.stdout_read.get(), POLLIN, 0});
      if (child.stderr_read.open()) fds.push_back({child.stderr_read.get(), POLLIN, 0});
    }
    // Short: exits are found by polling waitpid, and the stop deadlines must be kept.
    ::poll(fds.data(), fds.size(), 20);
    read_outputs();

    for (int32_t r = 0; r < world; ++r) {
      Child& child = children[static_cast<size_t>(r)];
      if (!child.running) continue;
      int status = 0;
      const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
      if (done == 0 || (done < 0 && errno == EINTR)) continue;
      child.running = false;
      RankExit& exit = result.ranks[static_cast<size_t>(r)];
      // done < 0: the status is lost (SIGCHLD ignored); it stays "exit code -1", a failure.
      if (done == child.pid) record_status(status, exit);
      exit.stopped = child.signal_sent != 0 && !exit.succeeded();
      if (!exit.succeeded() && !exit.stopped) note_failure(r);
    }

    const auto now = Clock::now();
    if (stop_at && now >= *stop_at && !kill_at) {
      signal_running(SIGTERM);
      kill_at = now + std::chrono::milliseconds(spec.stop_grace_ms);
    } else if (kill_at && now >= *kill_at) {
      signal_running(SIGKILL);
    }
  }
  // Everything the ranks wrote before they ended is in the pipes; a descendant that still
  // holds one open must not keep us waiting.
  read_outputs();
  for (int32_t r = 0; r < world; ++r) {
    Child& child = children[static_cast<size_t>(r)];
    child.stdout_read.reset();
    if (child.stderr_read.open()) {
      child.stderr_read.reset();
      consume_stderr(child, result.ranks[static_cast<size_t>(r)], forward);
    }
  }
  forward.flush();
  return result;
}

}  // namespace switchyard::lm_head
