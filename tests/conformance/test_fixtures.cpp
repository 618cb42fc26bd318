// The suite against plugins whose behaviour is known: a correct control, which must pass
// every case it can run, and one plugin per defect, which must fail the cases that name it
// (and only those).
#include <doctest/doctest.h>

#include <regex>

#include "suite_runner.hpp"

using namespace switchyard::test;
using switchyard::conformance::Outcome;

namespace {

// Checks that `name` ran with `outcome`, and that its detail contains `text`.
void expect(const SuiteRun& run, const std::string& name, Outcome outcome,
            const std::string& text = "") {
  const auto* result = run.find(name);
  INFO("case " << name);
  REQUIRE_MESSAGE(result != nullptr, "not in the case list; failures:\n" << run.failures());
  INFO("detail: " << result->detail);
  CHECK(result->outcome == outcome);
  CHECK(result->detail.find(text) != std::string::npos);
}

// Every failure's name matches `pattern`: a defect shows up in its cases and nowhere else.
void check_failures_only_in(const SuiteRun& run, const std::string& pattern) {
  const std::regex re(pattern);
  for (const auto* r : run.with(Outcome::Fail)) {
    INFO(r->name << "  " << r->detail);
    CHECK(std::regex_search(r->name, re));
  }
}

}  // namespace

TEST_CASE("a correct float-only plugin passes every case it declares") {
  const SuiteRun run = run_suite(conformance_fixture("good"));
  INFO(run.failures());
  CHECK(run.summary.failed == 0);
  CHECK(run.summary.passed > 80);
  CHECK(std::regex_match(run.last_line(), std::regex(R"(\d+ passed, 0 failed, \d+ skipped)")));
  CHECK(run.last_line() == std::to_string(run.summary.passed) + " passed, 0 failed, " +
                               std::to_string(run.summary.skipped) + " skipped");
  // Text: one line per case in the documented form.
  CHECK(run.text.find("PASS  ce/f32/tp2-unequal/smoothing-megatron/seed1  N=6 V=50 Vp=") !=
        std::string::npos);
  expect(run, "ce/f32/tp8-unequal/basic/seed3", Outcome::Pass, "Vp=");
  expect(run, "ce/f32/tp3-unequal/argmax-ties/seed1", Outcome::Pass, "argmax");
  expect(run, "ce/f32/tp1/grad-in-forward-aliased/seed1", Outcome::Pass);
  expect(run, "ce/f32/tp1/check-labels-refusal/seed1", Outcome::Pass, "refused");
  expect(run, "ce/f32/tp2/gathered-logits-refused/seed1", Outcome::Pass, "SY_ERR_INVALID_ARGUMENT");
  expect(run, "ce/f32/tp1/replay/seed1", Outcome::Pass, "bit-identical");
  expect(run, "ce/f32/tp2-unequal/batch-invariance/seed1", Outcome::Pass, "bit-identical");
  expect(run, "norm/f32/layer/h4096/seed1", Outcome::Pass, "H=4096");
  expect(run, "norm/f32/l2/batch-invariance/seed1", Outcome::Pass);
  // What the plugin does not declare is skipped, with the reason.
  expect(run, "ce/bf16/*", Outcome::Skip, "does not declare bfloat16");
  expect(run, "norm/f32/rms/residual/seed1", Outcome::Skip, "does not declare residual");
  // supports() refusing an undeclared combination is a skip, not a failure.
  expect(run, "ce/f32/tp1/grad-bf16/seed1", Outcome::Skip, "float32 logits and gradients only");
}

TEST_CASE("an output element left unwritten is caught by the poison") {
  const SuiteRun run = run_suite(conformance_fixture("unwritten"));
  expect(run, "ce/f32/tp1/basic/seed1", Outcome::Fail, "loss[6] got nan");
  expect(run, "ce/f32/tp4-unequal/basic/seed2", Outcome::Fail, "rank0 loss[5] got nan");
  expect(run, "norm/f32/rms/basic/seed1", Outcome::Fail, "y[4,126] got nan");
  expect(run, "norm/f32/layer/h1/seed1", Outcome::Fail, "y[4,0] got nan");
  expect(run, "ce/f32/tp1/v1/seed1", Outcome::Fail, "loss[4] got nan");
}

TEST_CASE("an off-by-one smoothing loss fails the smoothing cases only") {
  const SuiteRun run = run_suite(conformance_fixture("smoothing"));
  expect(run, "ce/f32/tp1/smoothing-megatron/seed1", Outcome::Fail, "worst loss[");
  expect(run, "ce/f32/tp1/smoothing-pytorch/seed2", Outcome::Fail, "worst loss[");
  expect(run, "ce/f32/tp2-unequal/smoothing-megatron/seed1", Outcome::Fail, "rank1 loss[");
  expect(run, "ce/f32/tp1/basic/seed1", Outcome::Pass);
  expect(run, "ce/f32/tp1/ignore-index/seed1", Outcome::Pass);
  expect(run, "ce/f32/tp1/v1/smoothing-megatron/seed1", Outcome::Pass);  // V = 1: no smoothing
  check_failures_only_in(run, "smoothing|all-features");
}

TEST_CASE("a DETERMINISTIC claim that depends on a call counter fails replay") {
  const SuiteRun run = run_suite(conformance_fixture("replay"));
  expect(run, "ce/f32/tp1/replay/seed1", Outcome::Fail, "two identical runs differ in");
  expect(run, "norm/f32/rms/replay/seed1", Outcome::Fail, "two identical runs differ in y");
  expect(run, "ce/f32/tp1/basic/seed1", Outcome::Pass);  // one ulp: inside the tolerance
  check_failures_only_in(run, "replay|batch-invariance");
}

TEST_CASE("a DETERMINISTIC claim that depends on the batch fails batch invariance only") {
  const SuiteRun run = run_suite(conformance_fixture("batch"));
  expect(run, "ce/f32/tp1/batch-invariance/seed1", Outcome::Fail, "computed as a batch of 1");
  expect(run, "ce/f32/tp2-unequal/batch-invariance/seed1", Outcome::Fail, "rank0 loss");
  expect(run, "norm/f32/layer/batch-invariance/seed1", Outcome::Fail, "in y");
  expect(run, "ce/f32/tp1/replay/seed1", Outcome::Pass);
  expect(run, "norm/f32/layer/replay/seed1", Outcome::Pass);
  check_failures_only_in(run, "batch-invariance");
}

TEST_CASE("a declared feature that is accepted and then fails, or refused, is a failure") {
  const SuiteRun run = run_suite(conformance_fixture("liar"));
  expect(run, "ce/f32/tp1/argmax/seed1", Outcome::Fail, "forward failed: SY_ERR_UNSUPPORTED");
  expect(run, "ce/f32/tp3-unequal/argmax-ties/seed1", Outcome::Fail, "rank 2: SY_ERR_UNSUPPORTED");
  expect(run, "ce/f32/tp1/ignore-index/seed1", Outcome::Fail,
         "declares f32 logits and ignore_index but refused");
  expect(run, "norm/f32/rms/zero-centered-gamma/seed1", Outcome::Fail,
         "zero-centred gamma is not implemented");
  expect(run, "ce/f32/tp1/basic/seed1", Outcome::Pass);
  expect(run, "ce/f32/tp1/labels-i32/seed1", Outcome::Pass);
  check_failures_only_in(
      run, "argmax|ignore-index|zero-centered-gamma|all-features|replay|batch-invariance");
}

TEST_CASE("a plugin that cannot be found is one failure naming it") {
  const SuiteRun run = run_suite(conformance_fixture("good") + ".missing");
  CHECK(run.summary.failed == 1);
  CHECK(run.summary.passed == 0);
  REQUIRE(run.results.size() == 1);
  CHECK(run.results[0].name == "plugin/load");
  CHECK(run.results[0].detail.find("conformance_good") != std::string::npos);
  CHECK(run.last_line() == "0 passed, 1 failed, 0 skipped");
}

TEST_CASE("selection: filter, family, device and seeds") {
  switchyard::conformance::ConformanceOptions options;
  options.plugin = conformance_fixture("good");
  options.filter = "tp1/basic";
  options.seeds = {7};
  SuiteRun run = run_suite(options);
  CHECK(run.summary.failed == 0);
  REQUIRE(run.results.size() == 1);
  CHECK(run.results[0].name == "ce/f32/tp1/basic/seed7");

  options.filter.clear();
  options.seeds.clear();
  options.quick = true;
  options.families = {switchyard::Family::Norm};
  options.devices = {kDLCUDA};
  run = run_suite(options);
  CHECK(run.summary.passed == 0);
  expect(run, "norm/cuda/*", Outcome::Skip, "does not declare the CUDA device");
  for (const auto& r : run.results) CHECK(r.name.rfind("norm/", 0) == 0);
}
