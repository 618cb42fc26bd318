// Starting the child that loads a candidate, and reading back what it found.
//
// The child is the switchyard-probe helper, started with posix_spawn: nothing of this process
// runs in it, so it does not matter which threads, locks or CUDA contexts this process has.
// The fork fallback (helper missing) is a copy of a possibly multithreaded process: there the
// child logs nothing, touches no spdlog, and leaves with _exit() (see probe_child.cpp).
#include "isolated_load.hpp"

#include "log.hpp"
#include "plugin_library.hpp"
#include "probe_child.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

extern char** environ;

namespace switchyard::detail {
namespace {

namespace fs = std::filesystem;

// Read by log.cpp when the helper's logger is created.
constexpr const char* kLogLevelVariable = "SWITCHYARD_LOG_LEVEL";

// The name set_log_level() and SWITCHYARD_LOG_LEVEL accept for this process's level.
const char* log_level_name() {
  switch (logger().level()) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err:
    case spdlog::level::critical: return "error";
    case spdlog::level::off: return "off";
    default: return "warn";
  }
}

// This process's environment with the log level it actually uses (a config file or
// RuntimeOptions may have set it, not the environment): the helper then logs what this process
// would, and never repeats a warning about a bad SWITCHYARD_LOG_LEVEL.
std::vector<std::string> helper_environment() {
  const std::string level_prefix = std::string(kLogLevelVariable) + "=";
  std::vector<std::string> variables;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, level_prefix.c_str(), level_prefix.size()) != 0)
      variables.emplace_back(*entry);
  }
  variables.push_back(level_prefix + log_level_name());
  return variables;
}

// argv/envp for posix_spawn: pointers into `strings`, null-terminated.
std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

class SpawnSetup {
 public:
  SpawnSetup() {
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawnattr_init(&attributes);
  }
  ~SpawnSetup() {
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
};

// Starts `helper PATH NAME=VALUE...` with its stdout on `result_fd` (the helper moves the
// result aside and points its own stdout at stderr, so that a plugin printing cannot corrupt
// the answer). The child's pid, or -1 with the reason in *error.
pid_t spawn_helper(const std::string& helper, const std::string& path, const HostServices& host,
                   int result_fd, int* error) {
  std::vector<std::string> arguments{helper, path};
  for (const auto& [name, value] : host.options()) arguments.push_back(name + "=" + value);
  std::vector<std::string> environment = helper_environment();
  std::vector<char*> argv = c_strings(arguments);
  std::vector<char*> envp = c_strings(environment);

  SpawnSetup setup;
  // A plugin must not read the caller's input.
  ::posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&setup.actions, result_fd, STDOUT_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Descriptors this process opened without O_CLOEXEC (other pipes of the host) stay here.
  ::posix_spawn_file_actions_addclosefrom_np(&setup.actions, STDERR_FILENO + 1);
#endif
  // Default dispositions and no blocked signal, whatever the calling thread has set: a crash
  // must reach the parent as the signal that caused it.
  sigset_t no_signals, all_signals;
  sigemptyset(&no_signals);
  sigfillset(&all_signals);
  ::posix_spawnattr_setsigmask(&setup.attributes, &no_signals);
  ::posix_spawnattr_setsigdefault(&setup.attributes, &all_signals);
  ::posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t child = -1;
  *error = ::posix_spawn(&child, helper.c_str(), &setup.actions, &setup.attributes, argv.data(),
                         envp.data());
  return *error == 0 ? child : -1;
}

// The fallback: a fork that loads in the copy of this process.
pid_t fork_child(const std::string& path, const HostServices& host, int read_fd, int result_fd) {
  const pid_t child = ::fork();
  if (child != 0) return child;
  ::close(read_fd);
  // A crash must end the child with its signal, as in the helper; not run the caller's crash
  // handlers (a test framework's, a Python faulthandler) in a copy of the caller.
  for (const int crash : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(crash, SIG_DFL);
  // A plugin printing to stdout must not corrupt the parent's output (e.g. `list --json`).
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  ::_exit(load_and_report(result_fd, path, host));
}

void warn_helper_unusable(const std::string& helper, int error) {
  const std::string where = helper.empty()
                                ? std::string("(its folder is unknown: dladdr could not locate "
                                              "libswitchyard)")
                                : helper + " (" + std::strerror(error) + ")";
  warn_once(std::string("probe helper unusable: ") + helper,
            std::string("the plugin probe helper ") + kProbeHelperName + " cannot be started: " +
                where +
                ". Plugins are listed in a forked child of this process instead, where a plugin "
                "that needs CUDA fails if this process has already initialised CUDA, and where "
                "a lock held by another thread can hang the listing. Build the switchyard_probe "
                "target, or install " + kProbeHelperName +
                " into <libdir>/switchyard/ next to libswitchyard's plugins folder.");
}

std::string signal_text(int signal_number) {
  const char* description = ::strsignal(signal_number);
  return "signal " + std::to_string(signal_number) +
         (description != nullptr ? std::string(", ") + description : std::string());
}

std::string duration_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

PluginInfo failed(const std::string& path, std::string reason) {
  PluginInfo info = blank_plugin_info(path);
  info.state = PluginState::Crashed;
  info.reason = std::move(reason);
  return info;
}

// Reads until EOF or the deadline. False on time-out.
bool read_until_eof(int fd, std::chrono::steady_clock::time_point deadline, std::string* out) {
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd waiting{fd, POLLIN, 0};
    const int ready = ::poll(&waiting, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return ready < 0;  // an error reads as EOF; 0 is a time-out
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return true;
    out->append(buffer, static_cast<std::size_t>(n));
  }
}

// Waits for the child until the deadline; kills it after. Returns the wait status and
// whether it had to be killed.
int reap(pid_t child, std::chrono::steady_clock::time_point deadline, bool* killed) {
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) return status;
    if (done < 0 && errno != EINTR) return status;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  *killed = true;
  ::kill(child, SIGKILL);
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// A pipe whose ends are both above stderr: the write end becomes the child's stdout, and
// must not be stderr itself (a caller that closed fd 2 would get it from pipe2).
bool make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    if (fds[i] > STDERR_FILENO) continue;
    const int moved = ::fcntl(fds[i], F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    if (moved < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return false;
    }
    ::close(fds[i]);
    fds[i] = moved;
  }
  return true;
}

}  // namespace

std::string probe_helper_path() {
  Dl_info where{};
  // Any function of libswitchyard locates the library it lives in.
  if (::dladdr(reinterpret_cast<void*>(&probe_helper_path), &where) == 0 ||
      where.dli_fname == nullptr) {
    return {};
  }
  std::error_code ec;
  const fs::path library = fs::absolute(where.dli_fname, ec);
  if (ec) return {};
  return (library.lexically_normal().parent_path() / "switchyard" / kProbeHelperName).string();
}

PluginInfo isolated_load(const std::string& path, const HostServices& host,
                         std::chrono::milliseconds timeout, const std::string& helper) {
  int fds[2];
  if (!make_pipe(fds)) {
    throw Error(SY_ERR_INTERNAL, std::string("cannot create a pipe to load ") + path +
                                     " in a child process: " + std::strerror(errno));
  }
  int spawn_error = ENOENT;
  pid_t child = helper.empty() ? -1 : spawn_helper(helper, path, host, fds[1], &spawn_error);
  const bool through_helper = child > 0;
  if (through_helper) {
    logger().debug("loading {} in {} (pid {})", path, helper, child);
  } else {
    warn_helper_unusable(helper, spawn_error);
    child = fork_child(path, host, fds[0], fds[1]);
  }
  if (child < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(SY_ERR_INTERNAL, std::string("cannot start a child process to load ") + path +
                                     ": " + std::strerror(error));
  }
  ::close(fds[1]);

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string bytes;
  const bool answered = read_until_eof(fds[0], deadline, &bytes);
  ::close(fds[0]);
  bool killed = !answered;
  if (killed) ::kill(child, SIGKILL);
  const int status = reap(child, deadline, &killed);

  const std::string file = fs::path(path).filename().string();
  if (killed) {
    return failed(path, file + " did not finish loading within " + duration_text(timeout) +
                            " (hung in a static constructor, " SY_PLUGIN_ENTRY_SYMBOL
                            " or probe?); the child process loading it was killed");
  }
  if (WIFSIGNALED(status)) {
    return failed(path, file + " crashed while loading (" + signal_text(WTERMSIG(status)) +
                            "); it was loaded in a child process, so nothing else was affected");
  }
  PluginInfo info;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kProbeAnswered &&
      deserialize_plugin_info(bytes, &info)) {
    return info;
  }
  const int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (through_helper && exit_status == kProbeBadArguments) {
    return failed(path, file + " could not be checked: the process loading it ended with exit "
                            "status " + std::to_string(exit_status) + ", which the probe helper " +
                            helper + " uses when it does not accept its arguments (a helper "
                            "from another Switchyard build than libswitchyard? reinstall so "
                            "that both come from one build), unless the plugin itself exited "
                            "with that status");
  }
  return failed(path, file + " ended the process loading it (exit status " +
                          std::to_string(exit_status) + ") before it could be checked");
}

}  // namespace switchyard::detail
