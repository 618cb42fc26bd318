// The core's logging: level names, SWITCHYARD_LOG_LEVEL, plugin lines, warn_once.
#include <doctest/doctest.h>

#include "log.hpp"

#include <spdlog/sinks/ringbuffer_sink.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using switchyard::detail::logger;

// Adds a ring-buffer sink to the core's logger for the scope, with the logger's own pattern,
// and restores the level it found.
class CapturedLog {
 public:
  CapturedLog() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)),
                  saved_level_(logger().level()) {
    sink_->set_pattern("[%n] [%l] %v");
    logger().sinks().push_back(sink_);
  }
  ~CapturedLog() {
    auto& sinks = logger().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    logger().set_level(saved_level_);
  }
  std::vector<std::string> lines() const { return sink_->last_formatted(); }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  spdlog::level::level_enum saved_level_;
};

std::string without_newline(std::string line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

// Runs the probe with SWITCHYARD_LOG_LEVEL set (or unset) and returns stdout + stderr.
std::string run_probe(const char* level_value) {
  std::string command = level_value == nullptr
                            ? std::string("env -u SWITCHYARD_LOG_LEVEL ")
                            : std::string("env SWITCHYARD_LOG_LEVEL='") + level_value + "' ";
  command += std::string("'") + SWITCHYARD_LOG_LEVEL_PROBE + "' 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 512> chunk{};
  while (std::fgets(chunk.data(), static_cast<int>(chunk.size()), pipe) != nullptr) {
    output += chunk.data();
  }
  CHECK(pclose(pipe) == 0);
  return output;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("log: the logger is called switchyard") {
  CHECK(logger().name() == "switchyard");
  CHECK(&logger() == &logger());
}

TEST_CASE("log: set_log_level accepts the documented names and refuses others") {
  CapturedLog capture;  // restores the level afterwards
  const std::pair<const char*, spdlog::level::level_enum> accepted[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"off", spdlog::level::off},
      {"WARNING", spdlog::level::warn}, {" Debug ", spdlog::level::debug}};
  for (const auto& [name, level] : accepted) {
    CAPTURE(name);
    CHECK(switchyard::detail::set_log_level(name));
    CHECK(logger().level() == level);
  }
  CHECK(switchyard::detail::set_log_level("info"));
  CHECK_FALSE(switchyard::detail::set_log_level("verbose"));
  CHECK_FALSE(switchyard::detail::set_log_level(""));
  CHECK_FALSE(switchyard::detail::set_log_level("critical"));
  CHECK(logger().level() == spdlog::level::info);  // a refused name changes nothing
}

TEST_CASE("log: SWITCHYARD_LOG_LEVEL is read at first use") {
  CHECK(contains(run_probe(nullptr), "level=warning"));
  CHECK(contains(run_probe("debug"), "level=debug"));
  CHECK(contains(run_probe("ERROR"), "level=error"));
  CHECK(contains(run_probe("off"), "level=off"));

  const std::string bad = run_probe("verbos");
  CAPTURE(bad);
  CHECK(contains(bad, "level=warning"));
  CHECK(contains(bad, "[switchyard] [warning] SWITCHYARD_LOG_LEVEL=\"verbos\" is not a log "
                      "level"));
  CHECK(contains(bad, "using \"warn\". Valid levels: trace, debug, info, warn, error, off."));
}

TEST_CASE("log: plugin lines carry the plugin name and honour the level") {
  CapturedLog capture;
  REQUIRE(switchyard::detail::set_log_level("info"));
  switchyard::detail::plugin_log(SY_LOG_WARN, "fused", "cache folder is read-only");
  switchyard::detail::plugin_log(SY_LOG_INFO, nullptr, "hello");
  switchyard::detail::plugin_log(SY_LOG_DEBUG, "fused", "filtered out at info");
  switchyard::detail::plugin_log(SY_LOG_ERROR, "te", nullptr);
  switchyard::detail::plugin_log(99, "te", "a level from the future is an error");
  switchyard::detail::plugin_log(SY_LOG_INFO, "liger", "braces {} and %s pass through");

  const std::vector<std::string> lines = capture.lines();
  std::vector<std::string> got;
  for (const std::string& line : lines) got.push_back(without_newline(line));
  const std::vector<std::string> expected{
      "[switchyard] [warning] [plugin:fused] cache folder is read-only",
      "[switchyard] [info] [plugin:<unnamed>] hello",
      "[switchyard] [error] [plugin:te] <no message>",
      "[switchyard] [error] [plugin:te] a level from the future is an error",
      "[switchyard] [info] [plugin:liger] braces {} and %s pass through"};
  CHECK(got == expected);
}

TEST_CASE("log: warn_once logs once per key, even from 8 threads at once") {
  CapturedLog capture;
  REQUIRE(switchyard::detail::set_log_level("warn"));
  std::atomic<int> logged{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 50; ++i) {
        if (switchyard::detail::warn_once("test.renamed.megatron",
                                          "backend 'megatron' was renamed to 'native'")) {
          ++logged;
        }
      }
    });
  }
  go = true;
  for (std::thread& thread : threads) thread.join();
  CHECK(logged.load() == 1);
  CHECK(switchyard::detail::warn_once("test.renamed.other", "another key logs too"));
  CHECK_FALSE(switchyard::detail::warn_once("test.renamed.other", "but only once"));

  const std::vector<std::string> lines = capture.lines();
  REQUIRE(lines.size() == 2);
  CHECK(without_newline(lines[0]) ==
        "[switchyard] [warning] backend 'megatron' was renamed to 'native'");
  CHECK(without_newline(lines[1]) == "[switchyard] [warning] another key logs too");
}
