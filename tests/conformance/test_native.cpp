// The native plugin (plugins/native) through the whole suite: nothing may fail.
#include <doctest/doctest.h>

#include <chrono>
#include <regex>

#include "suite_runner.hpp"

using namespace switchyard::test;
using switchyard::conformance::Outcome;

TEST_CASE("the native plugin passes the conformance suite") {
  const auto start = std::chrono::steady_clock::now();
  const SuiteRun run = run_suite("native");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(run.last_line() << " in " << seconds << " s");
  INFO(run.failures());
  CHECK(run.summary.failed == 0);
  CHECK(std::regex_match(run.last_line(), std::regex(R"(\d+ passed, 0 failed, \d+ skipped)")));
  // The native plugin offers both families on the CPU: the suite must actually run them.
  CHECK(run.summary.passed > 200);
  const auto* basic = run.find("ce/f32/tp1/basic/seed1");
  REQUIRE(basic != nullptr);
  CHECK(basic->outcome == Outcome::Pass);
  const auto* norm = run.find("norm/f32/rms/basic/seed1");
  REQUIRE(norm != nullptr);
  CHECK(norm->outcome == Outcome::Pass);
}
