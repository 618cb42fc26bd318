// Precedence: API > command line > environment > config file > built-in default, for every
// pair of sources, with the source and origin each resolved value reports.
#include "settings_test_support.hpp"

#include <doctest/doctest.h>

#include <functional>

using namespace switchyard;
using namespace switchyard::test;

namespace {

enum SourceBit { kApi = 1, kCli = 2, kEnv = 4, kConfig = 8 };

// One setting as each source spells it, and what each source's value must look like once
// resolved.
struct FieldCase {
  const char* name;
  std::function<void(RuntimeOptions&, const std::string&)> set_api;  // null: no API field
  const char* flag;                                                  // nullptr: no flag
  const char* variable;
  const char* section;
  const char* key;
  std::function<const Setting&(const Settings&)> get;
  std::string default_value;
  // Distinct (valid) values per source; the resolved value must equal the winner's.
  std::string api_value, cli_value, env_value, config_value;
};

const std::vector<FieldCase>& field_cases() {
  static const std::vector<FieldCase> cases{
      {"cross_entropy", [](RuntimeOptions& o, const std::string& v) { o.cross_entropy = v; },
       "--cross-entropy", "SWITCHYARD_CROSS_ENTROPY", "cross_entropy", "backend",
       [](const Settings& s) -> const Setting& { return s.cross_entropy; }, "native", "liger", "te",
       "fused", "vendor_ce"},
      {"norm", [](RuntimeOptions& o, const std::string& v) { o.norm = v; }, "--norm",
       "SWITCHYARD_NORM", "norm", "backend",
       [](const Settings& s) -> const Setting& { return s.norm; }, "native", "apex", "te", "liger",
       "fused"},
      // Only three kinds exist besides the default, so API and config share one; the source
      // and origin still tell them apart.
      {"norm_kind", [](RuntimeOptions& o, const std::string& v) { o.norm_kind = v; }, "--norm-kind",
       "SWITCHYARD_NORM_KIND", "norm", "kind",
       [](const Settings& s) -> const Setting& { return s.norm_kind; }, "RMSNorm", "L2Norm",
       "LayerNorm", "RMSNorm", "L2Norm"},
      {"log_level", nullptr, "--log-level", "SWITCHYARD_LOG_LEVEL", "runtime", "log_level",
       [](const Settings& s) -> const Setting& { return s.log_level; }, "warn", "", "debug",
       "error", "info"},
      {"system_path", nullptr, nullptr, "SWITCHYARD_PLUGIN_SYSTEM_PATH", "plugins", "system_path",
       [](const Settings& s) -> const Setting& { return s.system_path; }, "", "", "",
       "/opt/from_env", "/opt/from_config"},
  };
  return cases;
}

}  // namespace

TEST_CASE("every pair of sources: the higher one wins, and says where it came from") {
  LogLevelGuard restore_log_level;
  TempDir dir;
  for (const FieldCase& field : field_cases()) {
    const std::string config_path = dir.write(
        std::string(field.name) + ".ini",
        "[" + std::string(field.section) + "]\n" + field.key + " = " + field.config_value + "\n");
    for (int sources = 0; sources < 16; ++sources) {
      if ((sources & kApi) && !field.set_api) continue;
      if ((sources & kCli) && !field.flag) continue;
      CAPTURE(field.name);
      CAPTURE(sources);
      Env env{{"SWITCHYARD_CONFIG", config_path}};
      std::vector<std::string> args{"--unrelated-trainer-flag", "7"};
      RuntimeOptions options;
      if (sources & kApi) field.set_api(options, field.api_value);
      if (sources & kCli) {
        args.push_back(field.flag);
        args.push_back(field.cli_value);
      }
      if (sources & kEnv) env[field.variable] = field.env_value;
      if (!(sources & kConfig)) env.erase("SWITCHYARD_CONFIG");
      options.environment = env;
      options.args = args;

      const Settings settings = resolve_settings(options);
      const Setting& got = field.get(settings);
      if (sources & kApi) {
        CHECK(got.value == field.api_value);
        CHECK(got.source == Source::Api);
        CHECK(got.origin == std::string("RuntimeOptions::") + field.name);
      } else if (sources & kCli) {
        CHECK(got.value == field.cli_value);
        CHECK(got.source == Source::CommandLine);
        CHECK(got.origin == std::string(field.flag) + " " + field.cli_value);
      } else if (sources & kEnv) {
        CHECK(got.value == field.env_value);
        CHECK(got.source == Source::Environment);
        CHECK(got.origin == field.variable);
      } else if (sources & kConfig) {
        CHECK(got.value == field.config_value);
        CHECK(got.source == Source::ConfigFile);
        CHECK(got.origin == config_path + " [" + field.section + "] " + field.key);
      } else {
        CHECK(got.value == field.default_value);
        CHECK(got.source == Source::Default);
        CHECK(got.origin == "built-in default");
      }
    }
  }
}

TEST_CASE("deterministic: API beats --deterministic beats the environment beats the file") {
  TempDir dir;
  const std::string config = dir.write("d.ini", "[runtime]\ndeterministic = yes\n");

  Settings s = resolve({});
  CHECK(s.deterministic.value == "0");
  CHECK(s.deterministic.source == Source::Default);

  s = resolve({{"SWITCHYARD_CONFIG", config}});
  CHECK(s.deterministic.value == "1");
  CHECK(s.deterministic.origin == config + " [runtime] deterministic");

  s = resolve({{"SWITCHYARD_CONFIG", config}, {"SWITCHYARD_DETERMINISTIC", "false"}});
  CHECK(s.deterministic.value == "0");
  CHECK(s.deterministic.source == Source::Environment);
  CHECK(s.deterministic.origin == "SWITCHYARD_DETERMINISTIC");

  s = resolve({{"SWITCHYARD_DETERMINISTIC", "0"}}, {"--deterministic"});
  CHECK(s.deterministic.value == "1");
  CHECK(s.deterministic.source == Source::CommandLine);
  CHECK(s.deterministic.origin == "--deterministic");

  RuntimeOptions options = options_with({{"SWITCHYARD_DETERMINISTIC", "1"}}, {"--deterministic"});
  options.deterministic = false;
  s = resolve_settings(options);
  CHECK(s.deterministic.value == "0");
  CHECK(s.deterministic.source == Source::Api);
  CHECK(s.deterministic.origin == "RuntimeOptions::deterministic");
}

TEST_CASE("config file path: RuntimeOptions::config_file > --config > SWITCHYARD_CONFIG") {
  TempDir dir;
  const std::string from_api = dir.write("api.ini", "[cross_entropy]\nbackend = liger\n");
  const std::string from_cli = dir.write("cli.ini", "[cross_entropy]\nbackend = te\n");
  const std::string from_env = dir.write("env.ini", "[cross_entropy]\nbackend = fused\n");

  Settings s = resolve({});
  CHECK(s.config_file.value == "");
  CHECK(s.config_file.source == Source::Default);

  s = resolve({{"SWITCHYARD_CONFIG", from_env}});
  CHECK(s.config_file.value == from_env);
  CHECK(s.config_file.origin == "SWITCHYARD_CONFIG");
  CHECK(s.cross_entropy.value == "fused");

  s = resolve({{"SWITCHYARD_CONFIG", from_env}}, {"--config", from_cli});
  CHECK(s.config_file.value == from_cli);
  CHECK(s.config_file.source == Source::CommandLine);
  CHECK(s.cross_entropy.value == "te");

  RuntimeOptions options =
      options_with({{"SWITCHYARD_CONFIG", from_env}}, {"--config=" + from_cli});
  options.config_file = from_api;
  s = resolve_settings(options);
  CHECK(s.config_file.value == from_api);
  CHECK(s.config_file.origin == "RuntimeOptions::config_file");
  CHECK(s.cross_entropy.value == "liger");
  CHECK(s.cross_entropy.origin == from_api + " [cross_entropy] backend");
}

TEST_CASE("plugin folders accumulate, highest precedence first, without repeats") {
  TempDir dir;
  const std::string config =
      dir.write("p.ini", "[plugins]\npath = /cfg/a:/shared\npath = /cfg/b\n");
  RuntimeOptions options = options_with(
      {{"SWITCHYARD_CONFIG", config}, {"SWITCHYARD_PLUGIN_PATH", "/env/a::/shared:/env/b"}},
      {"--plugin-path", "/cli/a", "--plugin-path=/cli/b:/cli/c"});
  options.plugin_path = {"/api/a", "/api/b"};
  const Settings s = resolve_settings(options);

  std::vector<std::string> paths;
  for (const Setting& p : s.plugin_path) paths.push_back(p.value);
  const std::vector<std::string> expected{"/api/a", "/api/b",  "/cli/a", "/cli/b", "/cli/c",
                                          "/env/a", "/shared", "/env/b", "/cfg/a", "/cfg/b"};
  CHECK(paths == expected);
  REQUIRE(s.plugin_path.size() == expected.size());
  CHECK(s.plugin_path[0].source == Source::Api);
  CHECK(s.plugin_path[0].origin == "RuntimeOptions::plugin_path");
  CHECK(s.plugin_path[3].origin == "--plugin-path /cli/b:/cli/c");
  CHECK(s.plugin_path[6].source == Source::Environment);  // /shared: first seen in the environment
  CHECK(s.plugin_path[6].origin == "SWITCHYARD_PLUGIN_PATH");
  CHECK(s.plugin_path[9].origin == config + " [plugins] path");
}

TEST_CASE("disable globs accumulate from the environment and the config file") {
  TempDir dir;
  const std::string config = dir.write("x.ini", "[plugins]\ndisable = te, vendor_*\n");
  const Settings s =
      resolve({{"SWITCHYARD_CONFIG", config}, {"SWITCHYARD_DISABLE", "apex,liger:f*"}});
  std::vector<std::string> globs;
  for (const Setting& g : s.disable) globs.push_back(g.value);
  CHECK(globs == std::vector<std::string>{"apex", "liger", "f*", "te", "vendor_*"});
  CHECK(s.disable[0].origin == "SWITCHYARD_DISABLE");
  CHECK(s.disable[4].origin == config + " [plugins] disable");
}

TEST_CASE("describe() names the value, the source and the origin") {
  const Settings s = resolve({{"SWITCHYARD_CROSS_ENTROPY", "liger"}});
  CHECK(s.cross_entropy.describe() == "liger (environment: SWITCHYARD_CROSS_ENTROPY)");
  CHECK(s.norm.describe() == "native (default)");
  CHECK(s.warnings.empty());
}

TEST_CASE("API values are checked too, and errors name the field") {
  RuntimeOptions options = options_with({});
  options.cross_entropy = " ";
  std::string message = error_from([&] { resolve_settings(options); });
  CHECK(contains(message, "RuntimeOptions::cross_entropy is empty"));

  options = options_with({});
  options.norm_kind = "GroupNorm";
  message = error_from([&] { resolve_settings(options); });
  CHECK(contains(message, "RuntimeOptions::norm_kind is 'GroupNorm'"));

  options = options_with({});
  options.plugin_path = {"/ok", ""};
  message = error_from([&] { resolve_settings(options); });
  CHECK(contains(message, "RuntimeOptions::plugin_path[1] is empty"));
}
