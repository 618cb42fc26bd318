// `switchyard select`: what each family resolves to, from which request, and the failure
// message when it cannot be served.
#include "cli_runner.hpp"
#include "mini_json.hpp"

#include <doctest/doctest.h>

using namespace switchyard::test;

namespace {

std::string section(const std::string& text, const std::string& heading) {
  const std::string marker = heading + "\n";
  const auto start = text.rfind(marker, 0) == 0 ? 0 : text.find("\n" + marker);
  if (start == std::string::npos) return "<no section " + heading + ">";
  const auto body = text.find('\n', start + (start == 0 ? 0 : 1)) + 1;
  const auto end = text.find("\n\n", body);
  return text.substr(body, end == std::string::npos ? std::string::npos : end - body);
}

}  // namespace

TEST_CASE("select shows the request and its source, the backend, file, version, determinism") {
  const auto result = run_cli({"select"}, {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok")},
                                           {"SWITCHYARD_CROSS_ENTROPY", "cli_ok"},
                                           {"SWITCHYARD_NORM", fixture_file("cli_ok")}});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string ce = section(result.out, "cross_entropy");
  CHECK(field(ce, "requested") == "cli_ok (environment: SWITCHYARD_CROSS_ENTROPY)");
  CHECK(field(ce, "resolved") == "cli_ok");
  CHECK(field(ce, "file") == fixture_file("cli_ok"));
  CHECK(field(ce, "version") == "1.2.3");
  CHECK(field(ce, "determinism") == "deterministic");
  const std::string norm = section(result.out, "norm");
  CHECK(field(norm, "requested") == fixture_file("cli_ok") + " (environment: SWITCHYARD_NORM)");
  CHECK(field(norm, "determinism") == "nondeterministic");
  CHECK(field(norm, "norm kind") == "RMSNorm (default)");
}

TEST_CASE("select takes Megatron's flags, and the command line beats the environment") {
  const auto result = run_cli(
      {"select", "--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "cli_ok",
       "--normalization=LayerNorm"},
      {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok")},
       {"SWITCHYARD_CROSS_ENTROPY", "no_such_backend"},
       {"SWITCHYARD_NORM", "cli_ok"}});
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string ce = section(result.out, "cross_entropy");
  CHECK(field(ce, "resolved") == "cli_ok");
  CHECK(field(ce, "requested").find("(command line: ") != std::string::npos);
  CHECK(field(ce, "requested").find("--cross-entropy-fusion-impl") != std::string::npos);
  CHECK(field(section(result.out, "norm"), "norm kind").rfind("LayerNorm (command line", 0) == 0);
}

TEST_CASE("select with a missing backend: exit 1, the request, its source and the folders") {
  TempDir system;
  const auto result = run_cli({"select"}, {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok")},
                                           {"SWITCHYARD_PLUGIN_SYSTEM_PATH", system.path()},
                                           {"SWITCHYARD_CROSS_ENTROPY", "no_such_backend"},
                                           {"SWITCHYARD_NORM", "cli_ok"}});
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("switchyard select: error: cannot select a cross_entropy backend") !=
        std::string::npos);
  CHECK(result.err.find("no_such_backend") != std::string::npos);
  CHECK(result.err.find("SWITCHYARD_CROSS_ENTROPY") != std::string::npos);
  CHECK(result.err.find(fixture_folder("cli_ok")) != std::string::npos);
  CHECK(result.err.find(system.path()) != std::string::npos);
  // The family that can be served is still shown.
  CHECK(field(section(result.out, "norm"), "resolved") == "cli_ok");

  // Megatron's request for te with no te plugin anywhere names the flag that asked.
  const auto te = run_cli({"select", "--family", "cross_entropy", "--cross-entropy-loss-fusion",
                           "--cross-entropy-fusion-impl", "te"},
                          {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok")}});
  CHECK(te.exit_code == 1);
  CHECK(te.err.find("--cross-entropy-fusion-impl") != std::string::npos);
  CHECK(te.err.find(fixture_folder("cli_ok")) != std::string::npos);
  CHECK(te.out.empty());
}

TEST_CASE("select --family restricts the output; a bad family is a usage error") {
  const auto norm_only = run_cli({"select", "--family", "norm"},
                                 {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok")},
                                  {"SWITCHYARD_NORM", "cli_ok"},
                                  {"SWITCHYARD_CROSS_ENTROPY", "no_such_backend"}});
  CHECK(norm_only.exit_code == 0);
  CHECK(norm_only.out.find("cross_entropy") == std::string::npos);
  CHECK(field(norm_only.out, "resolved") == "cli_ok");

  const auto bad = run_cli({"select", "--family", "nrom"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--family 'nrom' is not a family") != std::string::npos);
  CHECK(bad.err.find("did you mean 'norm'?") != std::string::npos);
}

TEST_CASE("select --json gives both families, and the error for one that fails") {
  const auto result = run_cli({"select", "--json"},
                              {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok")},
                               {"SWITCHYARD_CROSS_ENTROPY", "no_such_backend"},
                               {"SWITCHYARD_NORM", "cli_ok"}});
  CHECK(result.exit_code == 1);
  JsonValue json;
  REQUIRE_NOTHROW(json = parse_json(result.out));
  CHECK(json["cross_entropy"]["requested"]["value"].text == "no_such_backend");
  CHECK(json["cross_entropy"]["error"].text.find("no_such_backend") != std::string::npos);
  CHECK(json["norm"]["resolved"].text == "cli_ok");
  CHECK(json["norm"]["path"].text == fixture_file("cli_ok"));
  CHECK(json["norm"]["requested"]["origin"].text == "SWITCHYARD_NORM");
  CHECK(json["norm"]["capabilities"]["features"][0].text == "layer_norm");
}
