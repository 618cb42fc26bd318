// `switchyard inspect <name|path>`: the descriptor, ABI, decoded capabilities, log, state.
#include "cli_runner.hpp"
#include "mini_json.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace switchyard::test;

namespace {

// The text between a line equal to `heading` and the next blank line.
std::string section(const std::string& text, const std::string& heading) {
  const auto start = text.find("\n" + heading + "\n");
  if (start == std::string::npos) return "<no section " + heading + ">";
  const auto body = start + heading.size() + 2;
  const auto end = text.find("\n\n", body);
  return text.substr(body, end == std::string::npos ? std::string::npos : end - body);
}

}  // namespace

TEST_CASE("inspect by path reports the descriptor, ABI, decoded capabilities and log") {
  const auto result = run_cli({"inspect", fixture_file("cli_ok")});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(field(result.out, "name") == "cli_ok");
  CHECK(field(result.out, "file") == fixture_file("cli_ok"));
  CHECK(field(result.out, "state") == "ok");
  CHECK(field(result.out, "version") == "1.2.3");
  CHECK(field(result.out, "vendor") == "Switchyard tests");
  CHECK(field(result.out, "description") == "A healthy fixture for the command line tests.");
  CHECK(field(result.out, "build info") == "cli fixture build");
  CHECK(field(result.out, "ABI").rfind("1.1 (this host: 1.", 0) == 0);
  CHECK(field(result.out, "descriptor struct_size").find("bytes (ABI 1.1)") != std::string::npos);

  const std::string ce = section(result.out, "cross_entropy");
  CHECK(field(ce, "dtypes") == "float32, bfloat16");
  CHECK(field(ce, "devices") == "cpu");
  CHECK(field(ce, "features") == "ignore_index, argmax, tensor_parallel");
  CHECK(field(ce, "determinism") == "deterministic");
  // The fixture answers 2 for tp_size > 1; the CLI asks with tp_size 2 on its device.
  CHECK(field(ce, "forward collectives") == "2 per forward (tp_size 2, float32, cpu)");

  const std::string norm = section(result.out, "norm");
  CHECK(field(norm, "dtypes") == "float32");
  CHECK(field(norm, "features") == "layer_norm, rms_norm, sm_margin");
  CHECK(field(norm, "determinism") == "nondeterministic");

  CHECK(result.out.find("cli_ok fixture loaded") != std::string::npos);  // the plugin's log
}

TEST_CASE("inspect by name searches the plugin path") {
  const auto result = run_cli({"inspect", "cli_ok"},
                              {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok")}});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(field(result.out, "file") == fixture_file("cli_ok"));
  CHECK(field(result.out, "version") == "1.2.3");
}

TEST_CASE("inspect: unavailable exits 0 with the reason; crashed exits 1 with an error") {
  const auto unavailable = run_cli({"inspect", fixture_file("cli_unavailable")});
  CHECK(unavailable.exit_code == 0);
  CHECK(field(unavailable.out, "state") == "unavailable");
  CHECK(field(unavailable.out, "reason").find("no fixture device on this machine") !=
        std::string::npos);
  CHECK(section(unavailable.out, "cross_entropy").find("not offered") != std::string::npos);

  const auto crashed = run_cli({"inspect", fixture_file("cli_crash")});
  CHECK(crashed.exit_code == 1);
  CHECK(crashed.signal == 0);
  CHECK(field(crashed.out, "state") == "crashed");
  CHECK(crashed.err.find("switchyard inspect: error: " + fixture_file("cli_crash")) !=
        std::string::npos);
}

TEST_CASE("inspect survives a plugin that crashes while a problem is bound to it") {
  // Loading and probing are fine; the forward's collectives need a bound problem, and binding
  // calls supports(), which kills the process that calls it: a child, not inspect.
  const auto result = run_cli({"inspect", fixture_file("cli_crash_supports")});
  CHECK(result.signal == 0);
  CHECK(result.exit_code == 0);
  CHECK(field(result.out, "state") == "ok");
  const std::string collectives = field(section(result.out, "cross_entropy"), "forward collectives");
  CHECK(collectives.find("not determined: the plugin crashed while binding a problem") == 0);
  CHECK(collectives.find("signal " + std::to_string(SIGSEGV)) != std::string::npos);
  CHECK(collectives.find("supports()") != std::string::npos);

  const auto json = run_cli({"inspect", "--json", fixture_file("cli_crash_supports")});
  CHECK(json.exit_code == 0);
  CHECK(parse_json(json.out)["forward_collectives"].text.find("crashed while binding a problem") !=
        std::string::npos);
}

TEST_CASE("inspect of something that is not there fails and names it") {
  const auto result = run_cli({"inspect", "no_such_plugin"},
                              {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok")}});
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("no_such_plugin") != std::string::npos);

  const auto missing_argument = run_cli({"inspect"});
  CHECK(missing_argument.exit_code == 2);
  CHECK(missing_argument.err.find("missing the plugin to inspect") != std::string::npos);
}

TEST_CASE("inspect --json carries the same facts") {
  const auto result = run_cli({"inspect", "--json", fixture_file("cli_ok")});
  REQUIRE(result.exit_code == 0);
  JsonValue json;
  REQUIRE_NOTHROW(json = parse_json(result.out));
  CHECK(json["name"].text == "cli_ok");
  CHECK(json["state"].text == "ok");
  CHECK(json["abi"]["major"].number == 1);
  CHECK(json["abi"]["descriptor_struct_size"].number == json["host"]["descriptor_struct_size"].number);
  CHECK(json["build_info"].text == "cli fixture build");
  const auto& features = json["families"]["cross_entropy"]["features"];
  REQUIRE(features.items.size() == 3);
  CHECK(features[1].text == "argmax");
  CHECK(json["families"]["cross_entropy"]["feature_bits"].number == 22);  // bits 1, 2, 4
  CHECK(json["forward_collectives"].text.rfind("2 per forward", 0) == 0);
  CHECK(json["log"].items.size() >= 1);

  const auto crashed = run_cli({"inspect", "--json", fixture_file("cli_crash")});
  CHECK(crashed.exit_code == 1);
  CHECK(parse_json(crashed.out)["state"].text == "crashed");
}
