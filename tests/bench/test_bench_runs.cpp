// switchyard-bench --device cpu --small against the native plugin: every case is there, every
// check passes, and the numbers in the JSON agree with each other and with the case shapes.
#include "bench_runner.hpp"
#include "test_paths.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace switchyard::test {
namespace {

const std::vector<std::string> kCases = {
    "ce_tp1_per_token", "ce_tp1_grad_in_forward", "ce_tp2_per_token", "ce_tp2_grad_in_forward",
    "rmsnorm_4096",     "rmsnorm_8192",           "layernorm_4096",   "layernorm_8192"};

const JsonValue* find_case(const JsonValue& doc, const std::string& name) {
  for (const auto& c : doc["cases"].items)
    if (c["name"].text == name) return &c;
  return nullptr;
}

// The bytes that must move, from the shape alone (bf16: 2 bytes an element).
double expected_floor_bytes(const JsonValue& c) {
  const double tensor = c["shape"][0].number * c["shape"][1].number * 2;
  if (c["family"].text == "norm") return 5 * tensor;
  return (c["path"].text == "per_token" ? 3 : 2) * tensor;
}

}  // namespace

TEST_CASE("bench on the CPU runs every case against native and every check passes") {
  ScratchDir dir;
  const RunResult run = run_bench({"--device", "cpu", "--small", "--family", "all", "--backends",
                                   "native", "--json", dir / "bench.json", "--quiet"});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  REQUIRE(run.exit_code == 0);
  const JsonValue doc = read_json(dir / "bench.json");

  CHECK(doc["schema"].text == "switchyard-bench/1");
  CHECK(doc["tool"].text == "switchyard-bench");
  CHECK(doc["device"]["type"].text == "cpu");
  CHECK(doc["settings"]["reps"].number == 20);
  CHECK(doc["settings"]["small"].boolean);
  const double copy_gbps = doc["copy_bandwidth"]["gb_per_s"].number;
  CHECK(copy_gbps > 0);

  std::vector<std::string> names;
  for (const auto& c : doc["cases"].items) names.push_back(c["name"].text);
  CHECK(names == kCases);

  std::set<std::string> with_result;
  for (const auto& r : doc["results"].items) {
    const std::string name = r["case"].text;
    INFO("case " << name);
    CHECK(r["name"].text == "native");
    CHECK(r["kind"].text == "backend");
    CHECK(with_result.insert(name).second);  // one result per case
    const JsonValue* c = find_case(doc, name);
    REQUIRE(c != nullptr);
    CHECK((*c)["floor"]["bytes"].number == expected_floor_bytes(*c));
    CHECK((*c)["floor"]["ms"].number ==
          doctest::Approx((*c)["floor"]["bytes"].number / (copy_gbps * 1e6)).epsilon(1e-6));

    if (r["status"].text == "skipped") {
      // Only a grad-in-forward case may be skipped, and only for the missing feature.
      CHECK((*c)["path"].text == "grad_in_forward");
      CHECK(r["reason"].text.find("SY_CE_FEATURE_GRAD_IN_FORWARD") != std::string::npos);
      continue;
    }
    REQUIRE(r["status"].text == "ok");
    CHECK(r["check"]["ran"].boolean);
    CHECK(r["check"]["passed"].boolean);
    CHECK(r["check"]["max_rel_error"].number < 1e-2);
    CHECK(r["check"]["rows"].number == std::min(32.0, (*c)["shape"][0].number));
    for (const auto& o : r["check"]["outputs"].items) CHECK(o["passed"].boolean);

    const auto& t = r["time_ms"];
    CHECK(r["reps"].number == 20);
    CHECK(t["samples"].items.size() == 20);
    CHECK(t["min"].number > 0);
    CHECK(t["min"].number <= t["median"].number);
    CHECK(t["median"].number <= t["max"].number);
    CHECK(r["gb_per_s"].number ==
          doctest::Approx((*c)["floor"]["bytes"].number / (t["median"].number * 1e6)).epsilon(1e-6));
    CHECK(r["x_floor"].number ==
          doctest::Approx(t["median"].number / (*c)["floor"]["ms"].number).epsilon(1e-6));
    CHECK(r["memory"]["extra_bytes"].number >= r["memory"]["workspace_bytes"].number);

    if ((*c)["family"].text == "ce") {
      CHECK(r["check"]["outputs"].items.size() == 3);  // loss, lse, grad
      const auto& coll = r["collectives"];
      if ((*c)["tp_size"].number == 2) {
        // The CPU runs TP2 for real, on the core's thread group: the counted collectives
        // of a forward are what the backend declares, and backward issues none.
        CHECK((*c)["tp_mode"].text == "thread group");
        CHECK((*c)["ranks"].number == 2);
        REQUIRE_FALSE(coll["forward"].is_null());
        CHECK(coll["forward"].number >= 1);
        if (coll["declared_forward"].number >= 0)
          CHECK(coll["forward"].number == coll["declared_forward"].number);
        if ((*c)["path"].text == "per_token") CHECK(coll["backward"].number == 0);
      } else {
        CHECK((*c)["tp_mode"].text == "tp1");
        CHECK(coll["forward"].is_null());  // no communicator at tp_size 1
      }
      if ((*c)["path"].text == "per_token") CHECK_FALSE(t["backward_median"].is_null());
    } else {
      const bool layer = name.rfind("layernorm", 0) == 0;
      CHECK(r["check"]["outputs"].items.size() == (layer ? 6u : 4u));  // y dx (mean) rstd dw (db)
    }
  }
  CHECK(with_result.size() == kCases.size());

  // The table: a header, and one PASS per checked result.
  CHECK(run.out.find("median ms") != std::string::npos);
  CHECK(run.out.find("FAIL") == std::string::npos);
  CHECK(run.out.find("PASS") != std::string::npos);
}

TEST_CASE("bench --family and --cases select what runs") {
  ScratchDir dir;
  const RunResult run = run_bench({"--device", "cpu", "--small", "--family", "norm", "--cases",
                                   "rmsnorm_4096,ce_tp1_per_token", "--backends", "native",
                                   "--json", dir / "bench.json", "--quiet"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const JsonValue doc = read_json(dir / "bench.json");
  // ce_tp1_per_token is named but not of the family: only rmsnorm_4096 runs.
  REQUIRE(doc["cases"].items.size() == 1);
  CHECK(doc["cases"][0]["name"].text == "rmsnorm_4096");
  REQUIRE(doc["results"].items.size() == 1);
  CHECK(doc["results"][0]["check"]["passed"].boolean);
}

}  // namespace switchyard::test
