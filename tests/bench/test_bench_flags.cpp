// switchyard-bench's command line: mistakes are named with what is accepted.
#include "bench_runner.hpp"

#include <doctest/doctest.h>

namespace switchyard::test {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("bad flags exit 1 with a message that names the flag and what it accepts") {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--family", "bogus"}, "--family 'bogus' is not a family; expected ce, norm or all"},
      {{"--device", "tpu"}, "--device 'tpu' is not supported; expected cuda or cpu"},
      {{"--cases", "ce_tp1,rmsnorm_4096"}, "--cases: unknown case 'ce_tp1'; known cases: ce_tp1_per_token"},
      {{"--reps", "0"}, "--reps must be at least 1, got 0"},
      {{"--grad-buffer", "both"}, "--grad-buffer 'both' is not supported; expected inplace or separate"},
      {{"--hold-kind", "sideways"}, "--hold-kind 'sideways' is not supported; expected gpu or host"},
      {{"--dtype", "int8"}, "--dtype 'int8' is not a data dtype; expected bf16, f16 or f32"},
      {{"--norm-hidden", "5120,0"}, "--norm-hidden '0' is not a hidden size; expected whole numbers in [1, 1048576]"},
      {{"--norm-hidden", "4k"}, "--norm-hidden '4k' is not a hidden size"},
      {{"--no-such-flag"}, "see switchyard-bench --help"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--device", "cpu", "--small"});
    if (c.args[0] == "--device") args = c.args;
    const RunResult run = run_bench(args);
    INFO(c.args[0] << ": " << run.err);
    CHECK(run.exit_code == 1);
    CHECK(contains(run.err, "switchyard-bench: error: "));
    CHECK(contains(run.err, c.message));
  }
}

TEST_CASE("fewer than 20 reps runs, with a warning, and records the count") {
  ScratchDir dir;
  const RunResult run = run_bench({"--device", "cpu", "--small", "--family", "norm", "--cases",
                                   "rmsnorm_4096", "--backends", "native", "--reps", "3",
                                   "--warmup", "1", "--json", dir / "bench.json", "--quiet"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(contains(run.err, "--reps 3 is below the 20 repetitions PERFORMANCE.md asks for"));
  const JsonValue doc = read_json(dir / "bench.json");
  CHECK(doc["settings"]["reps"].number == 3);
  CHECK(doc["results"][0]["time_ms"]["samples"].items.size() == 3);
}

TEST_CASE("--norm-hidden adds rmsnorm_H and layernorm_H, which run like the others") {
  const RunResult list = run_bench({"--list-cases", "--small", "--norm-hidden", "96,4096"});
  REQUIRE(list.exit_code == 0);
  CHECK(contains(list.out, "rmsnorm_96"));
  CHECK(contains(list.out, "layernorm_96"));
  CHECK(contains(list.out, "[64, 96]"));
  // 4096 is one of PERFORMANCE.md's cases already: listed once.
  const std::string::size_type first = list.out.find("rmsnorm_4096");
  REQUIRE(first != std::string::npos);
  CHECK(list.out.find("rmsnorm_4096", first + 1) == std::string::npos);

  ScratchDir dir;
  const RunResult run = run_bench({"--device", "cpu", "--small", "--family", "norm", "--norm-hidden",
                                   "96", "--cases", "layernorm_96", "--backends", "native",
                                   "--json", dir / "bench.json", "--quiet"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const JsonValue doc = read_json(dir / "bench.json");
  REQUIRE(doc["results"].items.size() == 1);
  CHECK(doc["results"][0]["case"].text == "layernorm_96");
}

TEST_CASE("--list-cases prints every case with its floor, --help the flags") {
  const RunResult list = run_bench({"--list-cases", "--small"});
  REQUIRE(list.exit_code == 0);
  for (const char* name : {"ce_tp1_per_token", "ce_tp2_grad_in_forward", "layernorm_8192"})
    CHECK(contains(list.out, name));
  CHECK(contains(list.out, "3-pass"));
  CHECK(contains(list.out, "5x tensor"));

  const RunResult help = run_bench({"--help"});
  REQUIRE(help.exit_code == 0);
  for (const char* flag : {"--backends", "--family", "--device", "--reps", "--warmup", "--cases",
                           "--small", "--json", "--list-cases", "--norm-hidden"})
    CHECK(contains(help.out, flag));
}

}  // namespace switchyard::test
