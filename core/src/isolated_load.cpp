// Loading a plugin in a forked child and reading back what it found.
//
// The child is a fork of a possibly multithreaded process: it may not take any lock another
// thread held at fork time. So it logs nothing (plugin lines are captured into the result),
// touches no spdlog, and leaves with _exit() (no atexit handlers, no static destructors).
#include "isolated_load.hpp"

#include "plugin_library.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

namespace switchyard::detail {
namespace {

constexpr char kMagic[] = "SYPI1";

class Writer {
 public:
  void number(std::int64_t value) {
    auto bits = static_cast<std::uint64_t>(value);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
  void text(const std::string& value) {
    number(static_cast<std::int64_t>(value.size()));
    out_ += value;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  bool number(std::int64_t* value) {
    if (in_.size() - position_ < 8) return false;
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i)
      bits |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[position_ + i])) << (8 * i);
    position_ += 8;
    *value = static_cast<std::int64_t>(bits);
    return true;
  }
  template <class T>
  bool number_as(T* value) {
    std::int64_t wide = 0;
    if (!number(&wide)) return false;
    *value = static_cast<T>(wide);
    return true;
  }
  bool text(std::string* value) {
    std::int64_t size = 0;
    if (!number(&size) || size < 0 || static_cast<std::uint64_t>(size) > in_.size() - position_)
      return false;
    value->assign(in_, position_, static_cast<std::size_t>(size));
    position_ += static_cast<std::size_t>(size);
    return true;
  }
  bool at_end() const { return position_ == in_.size(); }

 private:
  const std::string& in_;
  std::size_t position_ = 0;
};

void write_family(Writer& out, const FamilyInfo& family) {
  out.number(family.offered ? 1 : 0);
  out.number(family.dtypes);
  out.number(family.devices);
  out.number(family.features);
  out.number(family.determinism);
  out.number(family.table_struct_size);
}

bool read_family(Reader& in, FamilyInfo* family) {
  std::int64_t offered = 0;
  if (!in.number(&offered)) return false;
  family->offered = offered != 0;
  return in.number_as(&family->dtypes) && in.number_as(&family->devices) &&
         in.number_as(&family->features) && in.number_as(&family->determinism) &&
         in.number_as(&family->table_struct_size);
}

bool write_all(int fd, const std::string& bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

[[noreturn]] void run_child(int fd, const std::string& path, const HostServices& host) {
  // A plugin printing to stdout must not corrupt the parent's output (e.g. `list --json`).
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  int code = 0;
  try {
    // Non-owning: the parent's services outlive this child, which never unloads anything.
    const std::shared_ptr<const HostServices> services(std::shared_ptr<const HostServices>(),
                                                       &host);
    LoadOptions options;
    options.probe = true;
    options.isolated = true;
    const LoadResult result = PluginLibrary::load(path, services, options);
    if (!write_all(fd, serialize_plugin_info(result.info))) code = 2;
  } catch (...) {
    code = 3;
  }
  ::_exit(code);
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

}  // namespace

std::string serialize_plugin_info(const PluginInfo& info) {
  Writer out;
  out.text(kMagic);
  for (const std::string* text : {&info.path, &info.file_name, &info.name, &info.version,
                                  &info.vendor, &info.description, &info.build_info})
    out.text(*text);
  out.number(info.abi_major);
  out.number(info.abi_minor);
  out.number(info.descriptor_struct_size);
  out.number(static_cast<std::int64_t>(info.state));
  out.text(info.reason);
  out.number(static_cast<std::int64_t>(info.log.size()));
  for (const std::string& line : info.log) out.text(line);
  write_family(out, info.cross_entropy);
  write_family(out, info.norm);
  return out.take();
}

bool deserialize_plugin_info(const std::string& bytes, PluginInfo* info) {
  Reader in(bytes);
  std::string magic;
  if (!in.text(&magic) || magic != kMagic) return false;
  PluginInfo read;
  for (std::string* text : {&read.path, &read.file_name, &read.name, &read.version,
                            &read.vendor, &read.description, &read.build_info}) {
    if (!in.text(text)) return false;
  }
  std::int64_t state = 0, lines = 0;
  if (!in.number_as(&read.abi_major) || !in.number_as(&read.abi_minor) ||
      !in.number_as(&read.descriptor_struct_size) || !in.number(&state) ||
      !in.text(&read.reason) || !in.number(&lines)) {
    return false;
  }
  if (state < static_cast<std::int64_t>(PluginState::Ok) ||
      state > static_cast<std::int64_t>(PluginState::Disabled) || lines < 0 ||
      static_cast<std::size_t>(lines) > kMaxCapturedLogLines) {
    return false;
  }
  read.state = static_cast<PluginState>(state);
  read.log.resize(static_cast<std::size_t>(lines));
  for (std::string& line : read.log) {
    if (!in.text(&line)) return false;
  }
  if (!read_family(in, &read.cross_entropy) || !read_family(in, &read.norm) || !in.at_end())
    return false;
  *info = std::move(read);
  return true;
}

PluginInfo isolated_load(const std::string& path, const HostServices& host,
                         std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(SY_ERR_INTERNAL, std::string("cannot create a pipe to load ") + path +
                                     " in a child process: " + std::strerror(errno));
  }
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(SY_ERR_INTERNAL, std::string("cannot fork a child process to load ") + path +
                                     ": " + std::strerror(error));
  }
  if (child == 0) {
    ::close(fds[0]);
    run_child(fds[1], path, host);
  }
  ::close(fds[1]);

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string bytes;
  const bool answered = read_until_eof(fds[0], deadline, &bytes);
  ::close(fds[0]);
  bool killed = !answered;
  if (killed) ::kill(child, SIGKILL);
  const int status = reap(child, deadline, &killed);

  const std::string file = std::filesystem::path(path).filename().string();
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
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && deserialize_plugin_info(bytes, &info))
    return info;
  return failed(path, file + " ended the process loading it (exit status " +
                          std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                          ") before it could be checked");
}

}  // namespace switchyard::detail
