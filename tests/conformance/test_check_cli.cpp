// `switchyard check` as a user runs it: exit status, the per-case lines, the summary line,
// JSON, and bad command lines.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <regex>
#include <string>

#include "suite_runner.hpp"
#include "test_paths.hpp"

using namespace switchyard::test;

namespace {

struct Result {
  int status = -1;
  std::string out;  // stdout and stderr
};

// Runs the CLI with a clean SWITCHYARD_* environment.
Result check(const std::string& arguments) {
  const std::string command =
      "env -u SWITCHYARD_PLUGIN_PATH -u SWITCHYARD_CROSS_ENTROPY -u SWITCHYARD_NORM "
      "-u SWITCHYARD_DETERMINISTIC -u SWITCHYARD_DISABLE -u SWITCHYARD_CONFIG " +
      bin_dir() + "/switchyard check " + arguments + " 2>&1";
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string last_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(text.rfind('\n') + 1);
}

}  // namespace

TEST_CASE("switchyard check: a conforming plugin exits 0 with the summary line") {
  const Result r = check(conformance_fixture("good") + " --quick");
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("PASS  ce/f32/tp1/basic/seed1  N=7 V=50") != std::string::npos);
  CHECK(r.out.find("SKIP  ce/bf16/*  the plugin does not declare bfloat16") != std::string::npos);
  CHECK(
      std::regex_match(last_line(r.out), std::regex(R"([1-9]\d* passed, 0 failed, \d+ skipped)")));
}

TEST_CASE("switchyard check: a failing plugin exits 1 and names the case") {
  const Result r = check(conformance_fixture("unwritten") + " --family ce --filter tp1/basic");
  INFO(r.out);
  CHECK(r.status == 1);
  CHECK(r.out.find("FAIL  ce/f32/tp1/basic/seed1  worst loss[6] got nan") != std::string::npos);
  CHECK(last_line(r.out) == "0 passed, 3 failed, 0 skipped");
}

TEST_CASE("switchyard check: --seed reproduces one seed, --json gives a document") {
  const Result r =
      check(conformance_fixture("good") + " --family norm --filter rms/basic --seed 11 --json");
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.find("\"name\": \"norm/f32/rms/basic/seed11\"") != std::string::npos);
  CHECK(r.out.find("\"outcome\": \"pass\"") != std::string::npos);
  CHECK(r.out.find("\"line\": \"1 passed, 0 failed, 0 skipped\"") != std::string::npos);
}

TEST_CASE("switchyard check: bad command lines") {
  Result r = check(conformance_fixture("good") + " --family cross");
  CHECK(r.status == 2);
  CHECK(r.out.find("--family is 'cross', expected ce or norm") != std::string::npos);
  r = check(conformance_fixture("good") + " --device gpu");
  CHECK(r.status == 2);
  CHECK(r.out.find("expected cpu or cuda") != std::string::npos);
  r = check("");
  CHECK(r.status == 2);
  CHECK(r.out.find("missing the plugin to check") != std::string::npos);
}
