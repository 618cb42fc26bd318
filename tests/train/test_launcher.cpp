// The rank launcher with fake ranks (/bin/sh scripts): output routing, the environment, and
// what happens when a rank fails, crashes, ignores SIGTERM or cannot be started. Also the
// hidden rank flags it passes on, and the NCCL library loader's errors.
#include <doctest/doctest.h>

#include <switchyard/lm_head/launcher.hpp>
#include <switchyard/lm_head/nccl_library.hpp>
#include <switchyard/lm_head/rank_process.hpp>
#include <switchyard/switchyard.hpp>

#include "test_paths.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace lm = switchyard::lm_head;
using switchyard::Error;

namespace {

// A launch of `ranks` shell scripts; `script(r)` is rank r's. $1 is the rank inside it.
lm::LaunchSpec shell_ranks(int ranks, const std::vector<std::string>& scripts,
                           std::ostream& forwarded) {
  lm::LaunchSpec spec;
  spec.executable = "/bin/sh";
  spec.argv0 = "sh";
  for (int r = 0; r < ranks; ++r) {
    spec.arguments.push_back({"-c", scripts[static_cast<size_t>(r)], "fake-rank",
                              std::to_string(r)});
  }
  spec.rank_stderr = &forwarded;
  spec.failure_grace_ms = 100;
  spec.stop_grace_ms = 300;
  return spec;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class Fn>
std::string error_of(Fn&& fn, sy_status* status = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (status) *status = e.status();
    return e.what();
  }
  return "";
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) ::unsetenv(name_);
    else ::setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

}  // namespace

TEST_CASE("launcher: rank 0's stdout is collected, the others' stderr forwarded with the rank") {
  std::ostringstream forwarded;
  lm::LaunchSpec spec = shell_ranks(
      3,
      std::vector<std::string>(
          3, "echo out-$1; if [ $1 != 0 ]; then echo err-$1 >&2; printf 'no newline' >&2; fi"),
      forwarded);
  spec.capture_rank0_stdout = true;
  const lm::LaunchResult result = lm::launch_ranks(spec);
  CHECK(result.succeeded());
  CHECK(result.failure_message().empty());
  CHECK(result.rank0_stdout == "out-0\n");  // ranks 1 and 2 print to /dev/null
  const std::string lines = forwarded.str();
  CHECK(lines.find("[rank 1] err-1\n") != std::string::npos);
  CHECK(lines.find("[rank 2] err-2\n") != std::string::npos);
  CHECK(lines.find("[rank 2] no newline\n") != std::string::npos);  // the last, unterminated
  CHECK(lines.find("rank 0") == std::string::npos);  // rank 0's stderr is ours, not forwarded
  REQUIRE(result.ranks.size() == 3);
  for (const lm::RankExit& rank : result.ranks) {
    CHECK(rank.started);
    CHECK(rank.exit_code == 0);
    CHECK(rank.succeeded());
  }
  CHECK(result.ranks[1].stderr_tail == std::vector<std::string>{"err-1", "no newline"});
}

TEST_CASE("launcher: the environment of the ranks overrides ours, NVLink multicast off") {
  ScopedEnv nvls(lm::kNvlsVariable, "1");
  ScopedEnv kept("SWITCHYARD_LAUNCHER_TEST_KEPT", "kept");
  std::ostringstream forwarded;
  lm::LaunchSpec spec = shell_ranks(
      2, std::vector<std::string>(2, "echo $NCCL_NVLS_ENABLE $SWITCHYARD_LAUNCHER_TEST_KEPT; "
                                     "[ $1 = 0 ] || echo $NCCL_NVLS_ENABLE >&2"),
      forwarded);
  spec.environment = lm::rank_process_environment();
  spec.capture_rank0_stdout = true;
  const lm::LaunchResult result = lm::launch_ranks(spec);
  CHECK(result.succeeded());
  CHECK(result.rank0_stdout == "0 kept\n");
  CHECK(forwarded.str() == "[rank 1] 0\n");
}

TEST_CASE("launcher: a failing rank stops the others and is named with its last error line") {
  std::ostringstream forwarded;
  const auto start = std::chrono::steady_clock::now();
  lm::LaunchSpec spec = shell_ranks(
      3,
      {"exec sleep 30", "echo 'switchyard train: error: rank 1 of 3: boom' >&2; exit 3",
       "exec sleep 30"},
      forwarded);
  const lm::LaunchResult result = lm::launch_ranks(spec);
  CHECK(seconds_since(start) < 10);  // not the 30 s the others would have slept
  CHECK_FALSE(result.succeeded());
  CHECK(result.first_failure == 1);
  CHECK(result.ranks[1].exit_code == 3);
  CHECK_FALSE(result.ranks[1].stopped);
  for (int r : {0, 2}) {
    CHECK(result.ranks[static_cast<size_t>(r)].stopped);
    CHECK(result.ranks[static_cast<size_t>(r)].signal == SIGTERM);
  }
  const std::string message = result.failure_message();
  INFO(message);
  CHECK(message.find("rank 1 of 3 exited with code 3: switchyard train: error: rank 1 of 3: boom") ==
        0);
  CHECK(message.find("stopped ranks 0, 2") != std::string::npos);
}

TEST_CASE("launcher: a crash is reported with its signal; SIGTERM ignored means SIGKILL") {
  std::ostringstream forwarded;
  const auto start = std::chrono::steady_clock::now();
  lm::LaunchSpec spec =
      shell_ranks(2, {"trap '' TERM; while :; do sleep 0.1; done", "ulimit -c 0; kill -SEGV $$"},
                  forwarded);
  const lm::LaunchResult result = lm::launch_ranks(spec);
  CHECK(seconds_since(start) < 10);
  CHECK(result.first_failure == 1);
  CHECK(result.ranks[1].signal == SIGSEGV);
  CHECK(result.ranks[0].stopped);
  CHECK(result.ranks[0].signal == SIGKILL);
  const std::string message = result.failure_message();
  INFO(message);
  CHECK(message.find("rank 1 of 2 was killed by signal 11") == 0);
  CHECK(message.find("stopped rank 0") != std::string::npos);
}

TEST_CASE("launcher: when rank 0 fails first, the report points at its own message") {
  std::ostringstream forwarded;
  const lm::LaunchResult result =
      lm::launch_ranks(shell_ranks(2, {"exit 1", "exec sleep 30"}, forwarded));
  CHECK(result.first_failure == 0);
  const std::string message = result.failure_message();
  CHECK(message.find("rank 0 of 2 exited with code 1 (its own message is printed above)") == 0);
}

TEST_CASE("launcher: ranks that fail on their own within the grace are not called stopped") {
  std::ostringstream forwarded;
  lm::LaunchSpec spec = shell_ranks(
      2, {"sleep 1; exit 1", "echo 'error: same' >&2; exit 1"},
      forwarded);
  spec.failure_grace_ms = 5000;
  const lm::LaunchResult result = lm::launch_ranks(spec);
  CHECK(result.first_failure == 1);
  CHECK_FALSE(result.ranks[0].stopped);
  CHECK(result.ranks[0].exit_code == 1);
  CHECK(result.failure_message().find("; rank 0 exited with code 1") != std::string::npos);
}

TEST_CASE("launcher: a program that cannot be executed is a failure, not an exception") {
  std::ostringstream forwarded;
  lm::LaunchSpec spec;
  spec.executable = "/nonexistent/switchyard";
  spec.arguments = {{"train"}, {"train"}};
  spec.rank_stderr = &forwarded;
  const lm::LaunchResult result = lm::launch_ranks(spec);
  CHECK(result.first_failure == 0);
  CHECK_FALSE(result.ranks[0].started);
  CHECK_FALSE(result.ranks[1].started);
  const std::string message = result.failure_message();
  INFO(message);
  CHECK(message.find("rank 0 of 2 could not be started: exec /nonexistent/switchyard failed: "
                     "No such file or directory") == 0);
  CHECK(message.find("rank 1 could not be started: not started, because rank 0 could not be") !=
        std::string::npos);

  const std::string none = error_of([] { lm::launch_ranks(lm::LaunchSpec{}); });
  CHECK(none.find("no ranks") != std::string::npos);
}

TEST_CASE("rank processes get the user's arguments and the hidden flags, in that order") {
  const std::string id(256, 'a');
  const auto args = lm::rank_process_arguments({"--device", "cuda", "--tp", "2", "--json"},
                                               lm::RankIdentity{1, 2, id});
  const std::vector<std::string> expected = {"train", "--device", "cuda", "--tp", "2", "--json",
                                             "--rank", "1", "--world-size", "2", "--nccl-id", id};
  CHECK(args == expected);

  for (const char* flag : {"--rank", "--world-size=2", "--nccl-id"}) {
    const std::string message = error_of([&] {
      lm::rank_process_arguments({"--tp", "2", flag}, lm::RankIdentity{0, 2, id});
    });
    INFO(flag);
    CHECK(message.find(std::string("already hold ") + flag) != std::string::npos);
    CHECK(message.find("set by `switchyard train --device cuda --tp N`") != std::string::npos);
  }
}

TEST_CASE("a rank process's identity is checked against its options") {
  lm::TrainOptions options;
  options.device = "cuda";
  options.tp = 2;
  const std::string id(256, 'f');
  CHECK(error_of([&] { lm::validate_rank_identity({1, 2, id}, options); }).empty());

  struct Case {
    lm::RankIdentity identity;
    std::string device;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {{0, 3, id}, "cuda", {"--world-size 3", "expected --tp (2)"}},
      {{2, 2, id}, "cuda", {"--rank 2", "expected 0 to 1"}},
      {{-1, 2, id}, "cuda", {"--rank -1", "expected 0 to 1"}},
      {{0, 2, id}, "cpu", {"--rank with --device cpu", "only for --device cuda"}},
      {{0, 2, "abc"}, "cuda", {"--nccl-id", "256 hex digits", "got 3 characters"}},
      {{0, 2, std::string(256, 'g')}, "cuda", {"--nccl-id", "not all hex digits"}},
  };
  for (const Case& c : cases) {
    options.device = c.device;
    sy_status status = SY_OK;
    const std::string message =
        error_of([&] { lm::validate_rank_identity(c.identity, options); }, &status);
    INFO(message);
    CHECK(status == SY_ERR_INVALID_ARGUMENT);
    for (const std::string& text : c.expected) CHECK(message.find(text) != std::string::npos);
    CHECK(message.find("run that instead of passing them yourself") != std::string::npos);
  }
}

TEST_CASE("the NCCL library: every file tried is named with the loader's reason") {
  {
    ScopedEnv chosen(lm::kNcclLibraryVariable, "/nonexistent/libswitchyard-nccl.so.0");
    CHECK(lm::nccl_library_candidates("/opt/sy/bin") ==
          std::vector<std::string>{"/nonexistent/libswitchyard-nccl.so.0"});
    sy_status status = SY_OK;
    const std::string message = error_of([] { lm::NcclLibrary::open("/opt/sy/bin"); }, &status);
    INFO(message);
    CHECK(status == SY_ERR_UNAVAILABLE);
    CHECK(message.find("libswitchyard-nccl could not be loaded") != std::string::npos);
    CHECK(message.find("/nonexistent/libswitchyard-nccl.so.0: cannot open shared object file") !=
          std::string::npos);
    CHECK(message.find("SWITCHYARD_NCCL_LIBRARY=") != std::string::npos);
  }
  {
    // A library that loads but is not libswitchyard-nccl: the core library.
    ScopedEnv chosen(lm::kNcclLibraryVariable, switchyard::test::build_dir() + "/lib/libswitchyard.so.0");
    const std::string message = error_of([] { lm::NcclLibrary::open(""); });
    INFO(message);
    CHECK(message.find("loaded, but it lacks sy_nccl_get_unique_id, sy_nccl_comm_create") !=
          std::string::npos);
  }
  ::unsetenv(lm::kNcclLibraryVariable);
  const auto candidates = lm::nccl_library_candidates("/opt/sy/bin");
  REQUIRE(candidates.size() == 2);
  CHECK(candidates[0].find("/opt/sy/") == 0);
  CHECK(candidates[0].find("/libswitchyard-nccl.so.") != std::string::npos);
  CHECK(candidates[1].find("libswitchyard-nccl.so.") == 0);
}
