// The correctness check can fail: a fixture with wrong numbers and an unwritten output is
// reported as FAIL (exit 3), refusals as unsupported, a missing feature as skipped.
#include "bench_runner.hpp"
#include "test_paths.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

namespace switchyard::test {
namespace {

const JsonValue& result_for(const JsonValue& doc, const std::string& name) {
  for (const auto& r : doc["results"].items)
    if (r["case"].text == name) return r;
  throw std::runtime_error("no result for " + name);
}

const JsonValue& output(const JsonValue& result, const std::string& tensor) {
  for (const auto& o : result["check"]["outputs"].items)
    if (o["tensor"].text == tensor) return o;
  throw std::runtime_error("no output " + tensor);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a backend with wrong numbers FAILs the check, and the bench exits 3") {
  ScratchDir dir;
  const RunResult run = run_bench({"--device", "cpu", "--small", "--backends", "bench_wrong",
                                   "--plugin-path", fixture_dir() + "/bench_wrong", "--json",
                                   dir / "bench.json", "--quiet"});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.exit_code == 3);
  const JsonValue doc = read_json(dir / "bench.json");

  SUBCASE("cross entropy: wrong loss, unwritten lse, zero gradient") {
    const JsonValue& r = result_for(doc, "ce_tp1_per_token");
    CHECK(r["status"].text == "ok");  // it ran and was timed
    CHECK_FALSE(r["check"]["passed"].boolean);
    CHECK_FALSE(output(r, "loss")["passed"].boolean);
    CHECK(contains(output(r, "loss")["worst"].text, "got 1 expected"));
    // lse was never written: the NaN poison shows, and the error is infinite (null in JSON).
    CHECK_FALSE(output(r, "lse")["passed"].boolean);
    CHECK(contains(output(r, "lse")["worst"].text, "NaN"));
    CHECK(output(r, "lse")["rel_error"].is_null());
    CHECK_FALSE(output(r, "grad")["passed"].boolean);
    CHECK(output(r, "grad")["rel_error"].number == doctest::Approx(1.0));
  }
  SUBCASE("a missing feature is skipped, a refusal is unsupported") {
    const JsonValue& gif = result_for(doc, "ce_tp1_grad_in_forward");
    CHECK(gif["status"].text == "skipped");
    CHECK(contains(gif["reason"].text, "SY_CE_FEATURE_GRAD_IN_FORWARD"));
    const JsonValue& tp2 = result_for(doc, "ce_tp2_per_token");
    CHECK(tp2["status"].text == "unsupported");
    CHECK(contains(tp2["reason"].text, "bench_wrong does tp_size 1 only, got 2"));
    const JsonValue& layer = result_for(doc, "layernorm_4096");
    CHECK(layer["status"].text == "unsupported");
    CHECK(contains(layer["reason"].text, "bench_wrong does RMSNorm only"));
    CHECK(layer["time_ms"].is_null());
  }
  SUBCASE("norm: y = x and dx = dy fail") {
    const JsonValue& r = result_for(doc, "rmsnorm_4096");
    CHECK(r["status"].text == "ok");
    CHECK_FALSE(r["check"]["passed"].boolean);
    CHECK_FALSE(output(r, "y")["passed"].boolean);
    CHECK_FALSE(output(r, "dx")["passed"].boolean);
    CHECK_FALSE(output(r, "dweight")["passed"].boolean);
  }
  SUBCASE("the table says FAIL and why") {
    CHECK(contains(run.out, "FAIL"));
    CHECK(contains(run.out, "lse FAIL: worst lse["));
    CHECK(contains(run.out, "layernorm_4096 / bench_wrong: unsupported"));
  }
}

TEST_CASE("a backend that cannot be found is an error naming it") {
  ScratchDir dir;
  const RunResult run = run_bench({"--device", "cpu", "--small", "--family", "norm", "--cases",
                                   "rmsnorm_4096", "--backends", "no_such_backend", "--json",
                                   dir / "bench.json", "--quiet"});
  CHECK(run.exit_code == 3);
  const JsonValue doc = read_json(dir / "bench.json");
  REQUIRE(doc["results"].items.size() == 1);
  CHECK(doc["results"][0]["status"].text == "error");
  CHECK(contains(doc["results"][0]["reason"].text, "no_such_backend"));
}

}  // namespace switchyard::test
