// Isolated loading runs candidates in the switchyard-probe helper, a fresh process: the
// helper is found next to the plugins folder, is really used (the plugin reports the program
// it runs in), gets the caller's options and log level, contains crashes and hangs, and cannot
// be hung by a lock another thread of the caller holds, which a fork can. Without the helper,
// loading falls back to a fork and warns once.
#include "isolated_load.hpp"
#include "loader_support.hpp"
#include "log.hpp"
#include "test_paths.hpp"

#include <doctest/doctest.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <stdexcept>
#include <thread>

using loader_test::fixture;
using loader_test::fixture_file;
using loader_test::isolated_options;
using loader_test::LogCapture;
using switchyard::PluginInfo;
using switchyard::PluginState;
using switchyard::Runtime;
using switchyard::detail::HostServices;
using switchyard::detail::isolated_load;
using switchyard::detail::probe_helper_path;

namespace fs = std::filesystem;

namespace {

const HostServices& no_options() {
  static const HostServices services{std::map<std::string, std::string>{}};
  return services;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// The program a process runs, as /proc/self/exe names it.
std::string canonical(const std::string& path) {
  std::error_code ec;
  const fs::path resolved = fs::canonical(path, ec);
  return ec ? path : resolved.string();
}

std::string this_program() { return canonical("/proc/self/exe"); }

// The logger at `level` while alive (debug shows which process each candidate is loaded in).
class LogLevel {
 public:
  explicit LogLevel(const std::string& level) : saved_(switchyard::detail::logger().level()) {
    REQUIRE(switchyard::detail::set_log_level(level));
  }
  ~LogLevel() { switchyard::detail::logger().set_level(saved_); }

 private:
  spdlog::level::level_enum saved_;
};

// The one candidate listed in `folder` (the search path also holds the empty system folder).
PluginInfo candidate_in(const std::vector<switchyard::SearchLocation>& locations,
                        const std::string& folder) {
  for (const switchyard::SearchLocation& location : locations) {
    if (location.path != folder) continue;
    REQUIRE(location.candidates.size() == 1);
    return location.candidates[0];
  }
  FAIL("the search path does not hold " << folder);
  return {};
}

// A thread of this process that holds the mutex the locks_in_probe fixture takes in probe(),
// as a thread of a framework may hold a lock that a plugin's probe needs.
class LockHolder {
 public:
  LockHolder() {
    const std::string file = fixture("locking") + "/libfixture_probe_lock.so";
    std::promise<void> locked;
    std::future<void> is_locked = locked.get_future();
    holder_ = std::thread([this, file, &locked] {
      void* library = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      auto* get_lock = library == nullptr ? nullptr
                                          : reinterpret_cast<pthread_mutex_t* (*)()>(
                                                ::dlsym(library, "switchyard_fixture_probe_lock"));
      if (get_lock == nullptr) {
        locked.set_exception(std::make_exception_ptr(
            std::runtime_error("cannot open " + file + " or find its lock")));
        return;
      }
      pthread_mutex_t* lock = get_lock();
      ::pthread_mutex_lock(lock);
      locked.set_value();
      release_.get_future().wait();
      ::pthread_mutex_unlock(lock);
      ::dlclose(library);
    });
    try {
      is_locked.get();
    } catch (...) {
      holder_.join();
      throw;
    }
  }
  ~LockHolder() {
    release_.set_value();
    holder_.join();
  }
  LockHolder(const LockHolder&) = delete;
  LockHolder& operator=(const LockHolder&) = delete;

 private:
  std::promise<void> release_;
  std::thread holder_;
};

// A scratch folder under the build tree, emptied first.
std::string scratch(const std::string& name) {
  const fs::path folder = fs::path(switchyard::test::build_dir()) / "tests" / "scratch" / name;
  fs::remove_all(folder);
  fs::create_directories(folder);
  return folder.string();
}

}  // namespace

TEST_CASE("the helper is found next to the plugins folder, where the build puts it") {
  const std::string helper = probe_helper_path();
  CHECK(helper == (fs::path(switchyard::test::plugin_dir()).parent_path() / "switchyard-probe")
                      .lexically_normal()
                      .string());
  CHECK(::access(helper.c_str(), X_OK) == 0);
}

TEST_CASE("listing loads each candidate in the switchyard-probe helper") {
  const Runtime runtime(isolated_options({fixture("process")}));
  const PluginInfo listed = candidate_in(runtime.discover(true), fixture("process"));
  CHECK(listed.state == PluginState::Ok);
  CHECK(listed.name == "reports_process");
  REQUIRE(listed.log.size() == 1);
  CHECK(contains(listed.log[0], "info: probe ran in " + canonical(probe_helper_path()) + ";"));

  const PluginInfo inspected = runtime.inspect(fixture_file("process", "reports_process"));
  CHECK(inspected.state == PluginState::Ok);
  CHECK(contains(joined(inspected.log), "probe ran in " + canonical(probe_helper_path()) + ";"));
}

TEST_CASE("the helper gets the caller's log level and plugin options") {
  SUBCASE("the level this process uses, even when the environment says otherwise") {
    const LogLevel level("error");
    const PluginInfo info =
        isolated_load(fixture_file("process", "reports_process"), no_options());
    CHECK(contains(joined(info.log), "; SWITCHYARD_LOG_LEVEL=error;"));
  }
  SUBCASE("options, from the Runtime's settings") {
    const Runtime runtime(isolated_options({fixture("cpu_echo")},
                                           {{"SWITCHYARD_OPTION_CPU_ECHO__PROBE", "unavailable"}}));
    const PluginInfo info = runtime.inspect(fixture_file("cpu_echo", "cpu_echo"));
    CHECK(info.state == PluginState::Unavailable);
    CHECK(contains(info.reason, "option cpu_echo.probe = unavailable"));
  }
  SUBCASE("a wildcard option whose value holds '=' and spaces arrives whole") {
    const HostServices services{{{"*.note", "a=b c = d"}}};
    const PluginInfo info =
        isolated_load(fixture_file("process", "reports_process"), services);
    CHECK(contains(joined(info.log), "; note=a=b c = d\n"));
  }
}

TEST_CASE("a crash in the helper is reported as Crashed, with the signal") {
  const std::string path = fixture_file("crash", "crashes_on_load");
  const LogLevel level("debug");
  const LogCapture log;
  const PluginInfo info = isolated_load(path, no_options());
  CHECK(info.state == PluginState::Crashed);
  CHECK(info.name == "crashes_on_load");
  CHECK(contains(info.reason, "crashed while loading (signal 11, Segmentation fault)"));
  CHECK(contains(log.text(), "loading " + path + " in " + probe_helper_path() + " (pid "));
}

TEST_CASE("a hang in the helper ends with the time-out, and the helper is killed") {
  const std::string path = fixture_file("hang", "hangs_on_load");
  const LogLevel level("debug");
  const LogCapture log;
  const auto start = std::chrono::steady_clock::now();
  const PluginInfo info = isolated_load(path, no_options(), std::chrono::milliseconds(300));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(info.state == PluginState::Crashed);
  CHECK(contains(info.reason, "did not finish loading within 300 ms"));
  CHECK(contains(info.reason, "killed"));
  CHECK(contains(log.text(), "loading " + path + " in " + probe_helper_path()));
}

TEST_CASE("listing works while another thread holds a lock the plugin's probe takes") {
  const LockHolder holder;
  const Runtime runtime(isolated_options({fixture("locking")}));
  const auto start = std::chrono::steady_clock::now();
  const PluginInfo listed = candidate_in(runtime.discover(true), fixture("locking"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(listed.state == PluginState::Ok);
  CHECK(listed.reason.empty());
}

TEST_CASE("a fork hangs on that same lock: why listing needs the helper") {
  // The fallback, forced with a helper that does not exist: the fixture really reproduces the
  // deadlock that the test above shows the helper avoids.
  const LockHolder holder;
  const PluginInfo info = isolated_load(fixture_file("locking", "locks_in_probe"), no_options(),
                                        std::chrono::milliseconds(500),
                                        "/no/such/folder/for/locks/switchyard-probe");
  CHECK(info.state == PluginState::Crashed);
  CHECK(contains(info.reason, "did not finish loading within 500 ms"));
}

TEST_CASE("without the helper, loading falls back to a fork and warns once, naming the path") {
  const std::string missing = "/no/such/folder/switchyard-probe";
  const LogCapture log;
  const std::string path = fixture_file("process", "reports_process");
  const PluginInfo first = isolated_load(path, no_options(), std::chrono::seconds(10), missing);
  const PluginInfo second = isolated_load(path, no_options(), std::chrono::seconds(10), missing);
  CHECK(first.state == PluginState::Ok);
  CHECK(second.state == PluginState::Ok);
  // The fork runs this test program, not the helper.
  CHECK(contains(joined(first.log), "probe ran in " + this_program() + ";"));
  CHECK(log.count(missing + " (No such file or directory)") == 1);
  CHECK(contains(log.text(), "warning: the plugin probe helper switchyard-probe cannot be "
                             "started"));
  CHECK(contains(log.text(), "Build the switchyard_probe target"));

  SUBCASE("crashes are still contained there") {
    const PluginInfo crashed = isolated_load(fixture_file("crash", "crashes_on_load"),
                                             no_options(), std::chrono::seconds(10), missing);
    CHECK(crashed.state == PluginState::Crashed);
    CHECK(contains(crashed.reason, "signal 11, Segmentation fault"));
  }
}

TEST_CASE("a helper that refuses its arguments is named in the reason") {
  const std::string folder = scratch("refusing_helper");
  const std::string helper = folder + "/switchyard-probe";
  std::ofstream(helper) << "#!/bin/sh\nexit 64\n";
  REQUIRE(::chmod(helper.c_str(), 0755) == 0);
  const PluginInfo info = isolated_load(fixture_file("cpu_echo", "cpu_echo"), no_options(),
                                        std::chrono::seconds(10), helper);
  CHECK(info.state == PluginState::Crashed);
  CHECK(contains(info.reason, "exit status 64, which the probe helper " + helper +
                                  " uses when it does not accept its arguments"));
}

TEST_CASE("switchyard-probe run by hand explains what it is") {
  const std::string command = probe_helper_path() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[512];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 64);
  CHECK(contains(output, "switchyard-probe: no plugin path was given"));
  CHECK(contains(output, "switchyard inspect PLUGIN_PATH"));
}
