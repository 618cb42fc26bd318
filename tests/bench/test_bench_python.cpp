// The GPU-side Python tools, as far as a machine without torch can check them: peers.py runs
// the same cases as switchyard-bench (names, paths, shapes, TP), and plot.py reads the bench's
// JSON. Skipped when CMake found no python3.
#include "bench_runner.hpp"

#include <doctest/doctest.h>

#include <fstream>

namespace switchyard::test {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string describe_cases(const JsonValue& list) {
  std::string out;
  for (const auto& c : list.items)
    out += c["name"].text + " " + c["family"].text + " " + c["path"].text + " [" +
           std::to_string(static_cast<long long>(c["shape"][0].number)) + ", " +
           std::to_string(static_cast<long long>(c["shape"][1].number)) + "] tp" +
           std::to_string(static_cast<int>(c["tp_size"].number)) + "\n";
  return out;
}

}  // namespace

TEST_CASE("peers.py and switchyard-bench run the same cases") {
  if (python().empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  for (bool small : {false, true}) {
    std::vector<std::string> bench_args{"--list-cases", "--json", "-"};
    std::vector<std::string> peer_args{bench_script("peers.py"), "--list-cases", "--json", "-"};
    if (small) {
      bench_args.push_back("--small");
      peer_args.push_back("--small");
    }
    const RunResult bench = run_bench(bench_args);
    const RunResult peers = run_program(python(), peer_args);
    INFO(bench.err << peers.err);
    REQUIRE(bench.exit_code == 0);
    REQUIRE(peers.exit_code == 0);
    const std::string expected = describe_cases(parse_json(bench.out));
    CHECK(expected.size() > 0);
    CHECK(describe_cases(parse_json(peers.out)) == expected);
  }
}

TEST_CASE("plot.py reads the bench's JSON: a table always, a PNG when matplotlib is there") {
  if (python().empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  ScratchDir dir;
  const RunResult bench = run_bench({"--device", "cpu", "--small", "--family", "ce", "--cases",
                                     "ce_tp1_per_token", "--backends", "native", "--json",
                                     dir / "bench.json", "--quiet"});
  REQUIRE(bench.exit_code == 0);

  const RunResult table = run_program(python(), {bench_script("plot.py"), dir / "bench.json", "--table-only"});
  INFO(table.err);
  REQUIRE(table.exit_code == 0);
  CHECK(contains(table.out, "ce_tp1_per_token"));
  CHECK(contains(table.out, "native"));
  CHECK(contains(table.out, "PASS"));

  const RunResult png = run_program(python(), {bench_script("plot.py"), dir / "bench.json", "-o", dir / "bench.png"});
  INFO(png.err);
  if (png.exit_code == 2) {
    CHECK(contains(png.err, "matplotlib is not installed"));
    MESSAGE("no matplotlib: PNG not checked");
    return;
  }
  REQUIRE(png.exit_code == 0);
  std::ifstream file(dir / "bench.png", std::ios::binary);
  char magic[4] = {};
  file.read(magic, 4);
  CHECK(std::string(magic, 4) == "\x89PNG");

  const RunResult wrong = run_program(python(), {bench_script("plot.py"), bench_script("README.md")});
  CHECK(wrong.exit_code != 0);
}

}  // namespace switchyard::test
