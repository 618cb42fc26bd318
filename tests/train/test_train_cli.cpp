// `switchyard train` end to end: the built binary, the shipped corpus and the native backend.
#include <doctest/doctest.h>

#include "cli_runner.hpp"
#include "mini_json.hpp"
#include "test_paths.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace st = switchyard::test;

namespace {

// The build's real plugin folder, so the native backend is found; nothing else leaks in.
std::map<std::string, std::string> plugin_env() {
  return {{"SWITCHYARD_PLUGIN_SYSTEM_PATH", st::plugin_dir()}};
}

struct Run {
  st::CliResult cli;
  st::JsonValue json;
};

// Runs `switchyard train --json <args>`; requires success and a JSON document on stdout.
Run train(std::vector<std::string> args) {
  args.insert(args.begin(), {"train", "--json"});
  Run run;
  run.cli = st::run_cli(args, plugin_env());
  INFO("stderr: " << run.cli.err);
  INFO("stdout: " << run.cli.out);
  REQUIRE(run.cli.exit_code == 0);
  run.json = st::parse_json(run.cli.out);
  return run;
}

std::vector<double> losses_of(const st::JsonValue& json) {
  std::vector<double> losses;
  for (const auto& point : json["losses"].items) losses.push_back(point["loss"].number);
  return losses;
}

void check_loss_falls(const st::JsonValue& json, double fraction) {
  const auto losses = losses_of(json);
  REQUIRE(losses.size() >= 2);
  INFO("first logged loss " << losses.front() << ", last " << losses.back());
  CHECK(losses.back() <= (1.0 - fraction) * losses.front());
}

}  // namespace

TEST_CASE("the default corpus: loss falls by at least 30 % and the JSON says what ran") {
  const Run run = train({"--steps", "150"});
  const st::JsonValue& json = run.json;
  for (const char* key : {"backends", "losses", "tokens_per_s", "tp", "device", "steps", "data",
                          "shards", "loss_drop", "replicas_identical"}) {
    CHECK_MESSAGE(json.has(key), "missing key " << key);
  }
  CHECK(json["steps"].number == 150);
  CHECK(json["tp"].number == 1);
  CHECK(json["device"].text == "cpu");
  CHECK(json["vocab"].number == 256);
  CHECK(json["data"]["mode"].text == "corpus");
  CHECK(json["data"]["path"].text.find("share/switchyard/corpus.txt") != std::string::npos);
  CHECK(json["tokens_per_s"].number > 0);

  for (const char* family : {"cross_entropy", "norm"}) {
    const st::JsonValue& backend = json["backends"][family];
    CHECK(backend["name"].text == "native");
    CHECK_FALSE(backend["version"].text.empty());
    CHECK(backend["path"].text.find("libswitchyard-native.so") != std::string::npos);
    CHECK(backend["requested"].has("source"));
  }
  CHECK(json["backends"]["norm"]["kind"]["value"].text == "RMSNorm");

  // Steps 1, 25, 50, ..., 150: the first point is the untrained model alone.
  const auto& points = json["losses"].items;
  REQUIRE(points.size() == 7);
  CHECK(points.front()["step"].number == 1);
  CHECK(points.back()["step"].number == 150);
  // The untrained model predicts nearly uniformly over 256 bytes.
  CHECK(points.front()["loss"].number == doctest::Approx(std::log(256.0)).epsilon(0.02));
  check_loss_falls(json, 0.30);
}

TEST_CASE("--tp 2 and --tp 4 give the losses of --tp 1 (unequal shards included)") {
  const std::vector<std::string> common = {"--steps", "120", "--log-every", "20"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return train(args);
  };
  const Run one = with({"--tp", "1"});
  const auto reference = losses_of(one.json);
  REQUIRE(reference.size() == 7);
  // A rerun replays bit for bit (the JSON carries 17 significant digits).
  CHECK(losses_of(with({"--tp", "1"}).json) == reference);
  for (const char* tp : {"2", "4"}) {
    const Run run = with({"--tp", tp});
    CHECK(run.json["tp"].number == std::stod(tp));
    CHECK(run.json["shards"].items.size() == static_cast<size_t>(std::stoi(tp)));
    CHECK(run.json["replicas_identical"].boolean);
    const auto losses = losses_of(run.json);
    REQUIRE(losses.size() == reference.size());
    for (size_t i = 0; i < losses.size(); ++i) {
      INFO("--tp " << tp << ", logged point " << i);
      CHECK(std::fabs(losses[i] - reference[i]) <= 1e-5 * std::fabs(reference[i]));
    }
  }

  // Unequal shards: 1000 tokens over 3 ranks (334, 333, 333).
  const Run synthetic_one = with({"--vocab", "1000", "--tp", "1", "--batch", "64"});
  const Run synthetic_three = with({"--vocab", "1000", "--tp", "3", "--batch", "64"});
  const auto& shards = synthetic_three.json["shards"].items;
  REQUIRE(shards.size() == 3);
  CHECK(shards[0]["vocab_local"].number == 334);
  CHECK(shards[2]["vocab_local"].number == 333);
  const auto a = losses_of(synthetic_one.json), b = losses_of(synthetic_three.json);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("--vocab 1000 --tp 3, logged point " << i);
    CHECK(std::fabs(a[i] - b[i]) <= 1e-5 * std::fabs(a[i]));
  }
}

TEST_CASE("--vocab 32000: the synthetic large-vocabulary mode trains") {
  const Run run = train({"--vocab", "32000", "--steps", "40", "--batch", "64", "--log-every",
                         "10", "--tp", "2"});
  CHECK(run.json["vocab"].number == 32000);
  CHECK(run.json["data"]["mode"].text == "synthetic");
  const auto losses = losses_of(run.json);
  REQUIRE_FALSE(losses.empty());
  CHECK(losses.front() == doctest::Approx(std::log(32000.0)).epsilon(0.02));
  check_loss_falls(run.json, 0.30);
}

TEST_CASE("SGD trains too, and the norm kind follows --normalization") {
  const Run sgd = train({"--optimizer", "sgd", "--steps", "150"});
  CHECK(sgd.json["optimizer"].text == "sgd");
  check_loss_falls(sgd.json, 0.30);

  for (const char* kind : {"LayerNorm", "L2Norm"}) {
    const Run run = train({"--normalization", kind, "--steps", "100"});
    CHECK(run.json["backends"]["norm"]["kind"]["value"].text == kind);
    CHECK(run.json["backends"]["norm"]["kind"]["source"].text == "command line");
    check_loss_falls(run.json, 0.30);
  }
}

TEST_CASE("selection flags pass through to the runtime") {
  const Run native = train({"--norm", "native", "--cross-entropy", "native", "--steps", "5"});
  CHECK(native.json["backends"]["norm"]["name"].text == "native");
  CHECK(native.json["backends"]["norm"]["requested"]["source"].text == "command line");

  const st::CliResult missing = st::run_cli({"train", "--norm", "nosuch", "--steps", "5"},
                                            plugin_env());
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("switchyard train: error:") != std::string::npos);
  CHECK(missing.err.find("nosuch") != std::string::npos);
  CHECK(missing.err.find("native") != std::string::npos);  // the backends that are available
  CHECK(missing.out.find("step") == std::string::npos);    // failed before training
}

TEST_CASE("--device cuda fails cleanly on this machine, naming why") {
  for (const bool json : {false, true}) {
    std::vector<std::string> args = {"train", "--device", "cuda", "--steps", "5"};
    if (json) args.push_back("--json");
    const st::CliResult run = st::run_cli(args, plugin_env());
    CHECK(run.signal == 0);
    CHECK(run.exit_code == 1);
    CHECK(run.err.find("--device cuda") != std::string::npos);
    CHECK(run.err.find("no CUDA implementation") != std::string::npos);
    CHECK(run.err.find("--device cpu") != std::string::npos);
    CHECK(run.err.find("SY_ERR_UNAVAILABLE") != std::string::npos);
    if (json) {
      const st::JsonValue parsed = st::parse_json(run.out);
      CHECK(parsed["status"].text == "SY_ERR_UNAVAILABLE");
      CHECK(parsed["error"].text.find("--device cuda") != std::string::npos);
    }
  }
}

TEST_CASE("the text output names the backends, logs the loss and the throughput") {
  const st::CliResult run = st::run_cli({"train", "--steps", "30", "--log-every", "10"},
                                        plugin_env());
  INFO("stderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  const auto backends = st::tables_in(run.out, "family");
  REQUIRE(backends.size() == 1);
  REQUIRE(backends[0].rows.size() == 2);
  CHECK(backends[0].rows[0].at("family") == "cross_entropy");
  CHECK(backends[0].rows[1].at("family") == "norm");
  for (const auto& row : backends[0].rows) {
    CHECK(row.at("backend") == "native");
    CHECK(row.at("file").find("libswitchyard-native.so") != std::string::npos);
    CHECK(row.at("requested").find("native") != std::string::npos);
  }
  const auto losses = st::tables_in(run.out, "step");
  REQUIRE(losses.size() == 1);
  REQUIRE(losses[0].rows.size() == 4);  // steps 1, 10, 20, 30
  CHECK(losses[0].rows[3].at("step") == "30");
  CHECK(run.out.find("tokens/s") != std::string::npos);
}

TEST_CASE("bad train options are refused with the flag, the expected and the actual value") {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {{"--tp", "0"}, {"--tp 0", "expected 1 to 64 ranks"}},
      {{"--steps", "0"}, {"--steps 0", "at least 1 step"}},
      {{"--optimizer", "lion"}, {"--optimizer lion", "'sgd' or 'adam'"}},
      {{"--lr", "0"}, {"--lr", "expected a learning rate > 0"}},
      {{"--vocab", "1"}, {"--vocab 1", "0 (byte-level corpus)"}},
      {{"--corpus", "/nonexistent.txt"}, {"--corpus /nonexistent.txt", "no such file"}},
      {{"--device", "tpu"}, {"--device tpu", "expected 'cpu', 'cuda'"}},
      {{"--tp", "300", "--vocab", "200"}, {"--tp 300"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"train"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const st::CliResult run = st::run_cli(args, plugin_env());
    INFO("args: " << args[1] << " " << args[2] << "; stderr: " << run.err);
    CHECK(run.exit_code == 1);
    for (const std::string& text : c.expected) CHECK(run.err.find(text) != std::string::npos);
  }
  const st::CliResult unknown = st::run_cli({"train", "--step", "3"}, plugin_env());
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("--steps") != std::string::npos);  // did you mean
}
