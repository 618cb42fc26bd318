// `switchyard train` end to end: the built binary, the shipped corpus and the native backend.
#include <doctest/doctest.h>

#include "cli_runner.hpp"
#include "mini_json.hpp"
#include "test_paths.hpp"

#include <switchyard/lm_head/device.hpp>
#include <switchyard/lm_head/launcher.hpp>
#include <switchyard/lm_head/rank_process.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace st = switchyard::test;

namespace {

namespace lm = switchyard::lm_head;

// The build's real plugin folder, so the native backend is found; nothing else leaks in.
std::map<std::string, std::string> plugin_env() {
  return {{"SWITCHYARD_PLUGIN_SYSTEM_PATH", st::plugin_dir()}};
}

std::map<std::string, std::string> with(std::map<std::string, std::string> env,
                                        const std::string& name, const std::string& value) {
  env[name] = value;
  return env;
}

// CUDA devices this machine shows; the tests of the "no GPU" paths only run where there are
// too few (the GPU machine runs tests/train/gpu_train_check.sh instead).
int visible_cuda_devices() {
  int devices = 0;
  lm::describe_cuda_devices(&devices);
  return devices;
}

const std::string kSomeNcclId(256, 'a');

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

TEST_CASE("--device cuda without a GPU fails cleanly, naming why") {
  if (visible_cuda_devices() > 0) {
    MESSAGE("skipped: this machine has a CUDA device (gpu_train_check.sh covers it)");
    return;
  }
  for (const bool json : {false, true}) {
    std::vector<std::string> args = {"train", "--device", "cuda", "--steps", "5"};
    if (json) args.push_back("--json");
    const st::CliResult run = st::run_cli(args, plugin_env());
    INFO("stderr: " << run.err);
    CHECK(run.signal == 0);
    CHECK(run.exit_code == 1);
    CHECK(run.err.find("--device cuda:0: cannot train on CUDA") != std::string::npos);
    // The driver probe's words: "no CUDA driver (...)" or "no usable CUDA device (...)".
    CHECK((run.err.find("no CUDA driver") != std::string::npos ||
           run.err.find("CUDA device") != std::string::npos));
    CHECK(run.err.find("--device cpu") != std::string::npos);
    CHECK(run.err.find("SY_ERR_UNAVAILABLE") != std::string::npos);
    if (!json) CHECK(run.out.empty());  // failed before the header
    if (json) {
      const st::JsonValue parsed = st::parse_json(run.out);
      CHECK(parsed["status"].text == "SY_ERR_UNAVAILABLE");
      CHECK(parsed["error"].text.find("--device cuda:0") != std::string::npos);
    }
  }
}

TEST_CASE("--device cuda --tp 2 with too few GPUs says how many it needs and has") {
  if (visible_cuda_devices() >= 2) {
    MESSAGE("skipped: this machine has 2 CUDA devices (gpu_train_check.sh covers it)");
    return;
  }
  const st::CliResult run =
      st::run_cli({"train", "--device", "cuda", "--tp", "2", "--steps", "5"}, plugin_env());
  INFO("stderr: " << run.err);
  CHECK(run.exit_code == 1);
  CHECK(run.err.find("cannot start the 2 rank processes (one per GPU, joined by NCCL)") !=
        std::string::npos);
  CHECK(run.err.find("--device cuda --tp 2: needs 2 CUDA devices (one process per rank on "
                     "cuda:0..cuda:1), but this machine has") != std::string::npos);
  CHECK(run.err.find("a smaller --tp, or --device cpu") != std::string::npos);
  CHECK(run.err.find("SY_ERR_UNAVAILABLE") != std::string::npos);
#ifdef SWITCHYARD_TEST_HAVE_NCCL
  // The build's libswitchyard-nccl is found next to the binary: only the GPUs are missing.
  CHECK(run.err.find("libswitchyard-nccl could not be loaded") == std::string::npos);
#endif

  // --device cuda:1 --tp 2 needs cuda:1..cuda:2, three devices.
  const st::CliResult offset =
      st::run_cli({"train", "--device", "cuda:1", "--tp", "2"}, plugin_env());
  CHECK(offset.err.find("needs 3 CUDA devices (one process per rank on cuda:1..cuda:2)") !=
        std::string::npos);
}

TEST_CASE("--device cuda --tp 2 without libswitchyard-nccl names the library and the fix") {
  const std::string missing = "/nonexistent/libswitchyard-nccl.so.0";
  const st::CliResult run = st::run_cli({"train", "--device", "cuda", "--tp", "2", "--json"},
                                        with(plugin_env(), "SWITCHYARD_NCCL_LIBRARY", missing));
  INFO("stderr: " << run.err);
  CHECK(run.exit_code == 1);
  CHECK(run.err.find("libswitchyard-nccl could not be loaded; tried:\n  " + missing +
                     ": cannot open shared object file") != std::string::npos);
  CHECK(run.err.find("set SWITCHYARD_NCCL_LIBRARY=") != std::string::npos);
  const st::JsonValue parsed = st::parse_json(run.out);  // one document, the error
  CHECK(parsed["status"].text == "SY_ERR_UNAVAILABLE");
  CHECK(parsed["error"].text.find("libswitchyard-nccl could not be loaded") != std::string::npos);
}

TEST_CASE("the hidden rank flags: not in --help, checked, and passed through to the rank") {
  const st::CliResult help = st::run_cli({"train", "--help"}, plugin_env());
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("--device") != std::string::npos);
  for (const char* hidden : {"--rank", "--world-size", "--nccl-id"}) {
    CHECK_MESSAGE(help.out.find(hidden) == std::string::npos, hidden << " is listed in --help");
  }

  const st::CliResult partial =
      st::run_cli({"train", "--device", "cuda", "--tp", "2", "--rank", "1"}, plugin_env());
  CHECK(partial.exit_code == 1);
  CHECK(partial.err.find("--rank, --world-size and --nccl-id go together") != std::string::npos);
  CHECK(partial.err.find("missing --world-size, --nccl-id") != std::string::npos);

  const st::CliResult on_cpu = st::run_cli(
      {"train", "--tp", "2", "--rank", "0", "--world-size", "2", "--nccl-id", kSomeNcclId},
      plugin_env());
  CHECK(on_cpu.exit_code == 1);
  CHECK(on_cpu.err.find("rank 0 of 2: --rank with --device cpu") != std::string::npos);

  const st::CliResult bad_world = st::run_cli({"train", "--device", "cuda", "--tp", "2", "--rank",
                                               "0", "--world-size", "4", "--nccl-id", kSomeNcclId},
                                              plugin_env());
  CHECK(bad_world.err.find("--world-size 4: expected --tp (2)") != std::string::npos);

  // A well-formed rank gets as far as opening the NCCL library: here, a missing one.
  const std::vector<std::string> rank_args = lm::rank_process_arguments(
      {"--device", "cuda", "--tp", "2", "--steps", "3"}, lm::RankIdentity{1, 2, kSomeNcclId});
  const st::CliResult rank = st::run_cli(
      rank_args, with(plugin_env(), "SWITCHYARD_NCCL_LIBRARY", "/nonexistent/libsy-nccl.so"));
  INFO("stderr: " << rank.err);
  CHECK(rank.exit_code == 1);
  CHECK(rank.err.find("switchyard train: error: rank 1 of 2: libswitchyard-nccl could not be "
                      "loaded") != std::string::npos);
}

TEST_CASE("the launcher runs the real binary's rank processes and reports the first failure") {
  // Two rank processes of `switchyard train` that cannot join (no NCCL library): each fails
  // by itself; the report names a rank and its error line, rank 0's JSON error is collected.
  lm::LaunchSpec spec;
  spec.executable = st::bin_dir() + "/switchyard";
  for (int32_t rank = 0; rank < 2; ++rank) {
    spec.arguments.push_back(lm::rank_process_arguments(
        {"--device", "cuda", "--tp", "2", "--json"}, lm::RankIdentity{rank, 2, kSomeNcclId}));
  }
  spec.environment = {{"SWITCHYARD_NCCL_LIBRARY", "/nonexistent/libsy-nccl.so"},
                      {"SWITCHYARD_PLUGIN_SYSTEM_PATH", st::plugin_dir()}};
  spec.capture_rank0_stdout = true;
  spec.failure_grace_ms = 5000;  // both fail on their own, well within it
  std::ostringstream forwarded;
  spec.rank_stderr = &forwarded;
  const lm::LaunchResult result = lm::launch_ranks(spec);
  CHECK_FALSE(result.succeeded());
  for (const lm::RankExit& exit : result.ranks) {
    CHECK(exit.exit_code == 1);
    CHECK_FALSE(exit.stopped);
  }
  CHECK(forwarded.str().find("[rank 1] switchyard train: error: rank 1 of 2: libswitchyard-nccl") !=
        std::string::npos);
  const st::JsonValue rank0 = st::parse_json(result.rank0_stdout);
  CHECK(rank0["error"].text.find("rank 0 of 2: libswitchyard-nccl could not be loaded") == 0);
  const std::string message = result.failure_message();
  INFO(message);
  CHECK(message.find(" of 2 exited with code 1") != std::string::npos);
}

TEST_CASE("the CLI links neither CUDA nor NCCL: it starts on machines without them") {
  const std::string command = "readelf -d " + st::bin_dir() + "/switchyard 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  REQUIRE(pipe != nullptr);
  std::string dynamic;
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0) dynamic.append(buffer, got);
  if (dynamic.find("NEEDED") == std::string::npos) {
    MESSAGE("skipped: readelf is not available to read the binary's dynamic section");
    return;
  }
  for (const char* library : {"libcuda.so", "libcudart.so", "libnccl.so", "libswitchyard-nccl"}) {
    CHECK_MESSAGE(dynamic.find(library) == std::string::npos,
                  "switchyard needs " << library << " at load time");
  }
  CHECK(dynamic.find("libswitchyard.so") != std::string::npos);  // the check can fail
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
