// `switchyard doctor`: settings with sources, plugins, CUDA, NCCL, the JIT cache, a verdict.
#include "cli_runner.hpp"
#include "mini_json.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace switchyard::test;

namespace {

std::map<std::string, std::string> healthy() {
  return {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok")},
          {"SWITCHYARD_CROSS_ENTROPY", "cli_ok"},
          {"SWITCHYARD_NORM", "cli_ok"}};
}

}  // namespace

TEST_CASE("doctor shows every setting with its source, the plugins, and an ok verdict") {
  auto env = healthy();
  env["SWITCHYARD_DISABLE"] = "nothing_*";
  const auto result = run_cli({"doctor", "--norm-kind", "LayerNorm"}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.out << result.err);
  CHECK(field(result.out, "cross_entropy") == "cli_ok (environment: SWITCHYARD_CROSS_ENTROPY)");
  CHECK(field(result.out, "norm") == "cli_ok (environment: SWITCHYARD_NORM)");
  CHECK(field(result.out, "norm_kind").rfind("LayerNorm (command line: --norm-kind", 0) == 0);
  CHECK(field(result.out, "deterministic").find("(default)") != std::string::npos);
  CHECK(field(result.out, "plugin_path[0]") ==
        fixture_folder("cli_ok") + " (environment: SWITCHYARD_PLUGIN_PATH)");
  CHECK(field(result.out, "system_path").find("(environment: SWITCHYARD_PLUGIN_SYSTEM_PATH)") !=
        std::string::npos);
  CHECK(field(result.out, "disable[0]") == "nothing_* (environment: SWITCHYARD_DISABLE)");
  // The plugin table, aligned, with the state of each plugin.
  const auto tables = tables_in(result.out, "NAME");
  REQUIRE(tables.size() == 1);
  CHECK(tables[0].rows.at(0).at("STATE") == "ok");
  CHECK(result.out.find("1 plugin found, 1 can run here.") != std::string::npos);
  CHECK(result.out.find("verdict: ok — cross_entropy -> cli_ok, norm -> cli_ok") !=
        std::string::npos);
  CHECK(result.err.empty());
}

TEST_CASE("doctor says whether CUDA and NCCL are usable, with the reason when not") {
  const auto result = run_cli({"doctor"}, healthy());
  REQUIRE(result.exit_code == 0);
  // Either outcome is legitimate on a given machine; what is checked is that the answer is
  // a yes with devices, or a no with a reason that names what failed.
  const auto cuda_at = result.out.find("\nCUDA\n");
  const auto nccl_at = result.out.find("\nNCCL\n");
  REQUIRE(cuda_at != std::string::npos);
  REQUIRE(nccl_at != std::string::npos);
  const std::string cuda = result.out.substr(cuda_at, nccl_at - cuda_at);
  const std::string usable = field(cuda, "usable");
  if (usable == "yes") {
    CHECK(field(cuda, "devices") != "0");
  } else {
    CHECK(usable.rfind("no: ", 0) == 0);
    const bool named = usable.find("libcuda.so.1") != std::string::npos ||
                       usable.find("cuInit") != std::string::npos ||
                       usable.find("no devices") != std::string::npos;
    CHECK_MESSAGE(named, usable);
  }
  CHECK(field(cuda, "driver").rfind("libcuda.so.1", 0) == 0);
  const std::string nccl = result.out.substr(nccl_at);
  const std::string nccl_usable = field(nccl, "usable");
  CHECK((nccl_usable == "yes" || nccl_usable.find("libnccl.so.2") != std::string::npos));
  if (nccl_usable == "yes") CHECK(field(nccl, "library").find(", version 2.") != std::string::npos);
}

TEST_CASE("doctor locates the JIT cache: option, SWITCHYARD_CACHE_DIR, XDG, HOME") {
  TempDir scratch;
  auto env = healthy();
  env["HOME"] = scratch.path();
  const auto by_home = run_cli({"doctor"}, env);
  REQUIRE(by_home.exit_code == 0);
  CHECK(field(by_home.out, "location") == scratch / ".cache/switchyard");
  CHECK(field(by_home.out, "from") == "default: ~/.cache/switchyard");
  CHECK(field(by_home.out, "state") == "does not exist yet, will be created on first use");

  env["XDG_CACHE_HOME"] = scratch / "xdg";
  CHECK(field(run_cli({"doctor"}, env).out, "location") == scratch / "xdg/switchyard");

  std::filesystem::create_directory(scratch / "kernels");
  env["SWITCHYARD_CACHE_DIR"] = scratch / "kernels";
  const auto by_variable = run_cli({"doctor"}, env);
  CHECK(field(by_variable.out, "location") == scratch / "kernels");
  CHECK(field(by_variable.out, "from") == "environment: SWITCHYARD_CACHE_DIR");
  CHECK(field(by_variable.out, "state") == "exists, writable");

  const auto by_option =
      run_cli({"doctor", "--plugin-option", "fused.cache_dir=" + (scratch / "opt")}, env);
  CHECK(field(by_option.out, "location") == scratch / "opt");
  CHECK(field(by_option.out, "from").rfind("plugin option fused.cache_dir (command line", 0) == 0);

  // A cache folder that cannot be created is a problem, unless the cache is disabled.
  std::ofstream(scratch / "a_file") << "in the way";
  env["SWITCHYARD_CACHE_DIR"] = scratch / "a_file/cache";
  const auto unusable = run_cli({"doctor"}, env);
  CHECK(unusable.exit_code == 1);
  CHECK(field(unusable.out, "state") ==
        "does not exist and cannot be created (" + (scratch / "a_file") + " is not a folder)");
  CHECK(unusable.err.find("JIT cache " + (scratch / "a_file/cache")) != std::string::npos);
  env["SWITCHYARD_CACHE_DISABLE"] = "1";
  const auto disabled = run_cli({"doctor"}, env);
  CHECK(disabled.exit_code == 0);
  CHECK(field(disabled.out, "disabled") == "yes (environment: SWITCHYARD_CACHE_DISABLE = 1)");
}

TEST_CASE("doctor with a backend that cannot be served: verdict problems, exit 1, stderr") {
  auto env = healthy();
  env["SWITCHYARD_CROSS_ENTROPY"] = "no_such_backend";
  const auto result = run_cli({"doctor"}, env);
  CHECK(result.exit_code == 1);
  CHECK(result.out.find("verdict: problems") != std::string::npos);
  CHECK(result.err.find("cross_entropy cannot be served") != std::string::npos);
  CHECK(result.err.find("no_such_backend") != std::string::npos);
}

TEST_CASE("doctor warns about a crashing plugin but still serves the families") {
  auto env = healthy();
  env["SWITCHYARD_PLUGIN_PATH"] = fixture_folder("cli_ok") + ":" + fixture_folder("cli_crash");
  const auto result = run_cli({"doctor"}, env);
  CHECK(result.exit_code == 0);
  CHECK(result.out.find("warning: " + fixture_file("cli_crash") + " crashed") != std::string::npos);
  CHECK(result.out.find("verdict: ok with warnings") != std::string::npos);
}

TEST_CASE("doctor --json is one valid document with every section") {
  const auto result = run_cli({"doctor", "--json"}, healthy());
  REQUIRE(result.exit_code == 0);
  JsonValue json;
  REQUIRE_NOTHROW(json = parse_json(result.out));
  CHECK(json["settings"]["cross_entropy"]["value"].text == "cli_ok");
  CHECK(json["settings"]["cross_entropy"]["source"].text == "environment");
  CHECK(json["settings"]["cross_entropy"]["origin"].text == "SWITCHYARD_CROSS_ENTROPY");
  CHECK(json["search_path"][0]["candidates"][0]["state"].text == "ok");
  CHECK(json["cuda"]["usable"].kind == JsonValue::Kind::Bool);
  CHECK((json["cuda"]["usable"].boolean || !json["cuda"]["reason"].text.empty()));
  CHECK(json["nccl"]["usable"].kind == JsonValue::Kind::Bool);
  CHECK(json["cache"]["path"].text.find(".cache/switchyard") != std::string::npos);
  CHECK(json["selection"]["norm"]["resolved"].text == "cli_ok");
  CHECK(json["verdict"].text == "ok");
}
