// The SWITCHYARD_* environment variables.
#include "log.hpp"
#include "settings_test_support.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

using namespace switchyard;
using namespace switchyard::test;

TEST_CASE("every variable is read, with its name as origin") {
  LogLevelGuard restore_log_level;
  const Settings s = resolve({
      {"SWITCHYARD_CROSS_ENTROPY", "liger"},
      {"SWITCHYARD_NORM", "/opt/vendor/libswitchyard-acme.so"},
      {"SWITCHYARD_NORM_KIND", "layernorm"},
      {"SWITCHYARD_DETERMINISTIC", "YES"},
      {"SWITCHYARD_LOG_LEVEL", "Error"},
      {"SWITCHYARD_PLUGIN_PATH", "/a:/b"},
      {"SWITCHYARD_PLUGIN_SYSTEM_PATH", "/opt/sy/plugins"},
      {"SWITCHYARD_DISABLE", "te,apex"},
      {"SWITCHYARD_CACHE_DIR", "/scratch/cache"},
      {"SWITCHYARD_CACHE_DISABLE", "true"},
      {"PATH", "/usr/bin"},
  });
  CHECK(s.cross_entropy.value == "liger");
  CHECK(s.norm.value == "/opt/vendor/libswitchyard-acme.so");
  CHECK(s.norm.origin == "SWITCHYARD_NORM");
  CHECK(s.norm_kind.value == "LayerNorm");
  CHECK(s.norm_kind.origin == "SWITCHYARD_NORM_KIND");
  CHECK(s.deterministic.value == "1");
  CHECK(s.log_level.value == "error");
  CHECK(s.system_path.value == "/opt/sy/plugins");
  CHECK(s.system_path.origin == "SWITCHYARD_PLUGIN_SYSTEM_PATH");
  REQUIRE(s.plugin_path.size() == 2);
  CHECK(s.plugin_path[1].value == "/b");
  REQUIRE(s.disable.size() == 2);
  CHECK(s.disable[1].value == "apex");
  REQUIRE(s.plugin_options.count("*.cache_dir") == 1);
  CHECK(s.plugin_options.at("*.cache_dir").value == "/scratch/cache");
  CHECK(s.plugin_options.at("*.cache_dir").origin == "SWITCHYARD_CACHE_DIR");
  REQUIRE(s.plugin_options.count("*.cache_disable") == 1);
  CHECK(s.plugin_options.at("*.cache_disable").value == "1");
  CHECK(s.warnings.empty());
}

TEST_CASE("SWITCHYARD_LOG_LEVEL is applied to the core's logger") {
  LogLevelGuard restore_log_level;
  detail::logger().set_level(spdlog::level::warn);
  resolve({{"SWITCHYARD_LOG_LEVEL", "debug"}});
  CHECK(detail::logger().level() == spdlog::level::debug);
  resolve({{"SWITCHYARD_LOG_LEVEL", "off"}});
  CHECK(detail::logger().level() == spdlog::level::off);
  // Unset: the level someone else chose is left alone.
  resolve({});
  CHECK(detail::logger().level() == spdlog::level::off);
}

TEST_CASE("a bad log level is warned about and ignored, never fatal") {
  LogLevelGuard restore_log_level;
  const Settings s = resolve({{"SWITCHYARD_LOG_LEVEL", "verbose"}});
  CHECK(s.log_level.value == "warn");
  CHECK(s.log_level.source == Source::Default);
  const auto notes =
      warnings_containing(s, "SWITCHYARD_LOG_LEVEL is 'verbose', which is not a log level");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "trace, debug, info, warn, error or off"));
}

TEST_CASE("SWITCHYARD_DETERMINISTIC accepts 1/0/true/false/yes/no and refuses anything else") {
  for (const char* yes : {"1", "true", "TRUE", "yes", "Yes"})
    CHECK(resolve({{"SWITCHYARD_DETERMINISTIC", yes}}).deterministic.value == "1");
  for (const char* no : {"0", "false", "no", "NO"})
    CHECK(resolve({{"SWITCHYARD_DETERMINISTIC", no}}).deterministic.value == "0");

  const std::string message = error_from([] { resolve({{"SWITCHYARD_DETERMINISTIC", "maybe"}}); });
  CHECK(contains(message, "SWITCHYARD_DETERMINISTIC is 'maybe', which is not a boolean"));
  CHECK(contains(message, "expected 1, 0, true, false, yes or no"));

  const std::string cache = error_from([] { resolve({{"SWITCHYARD_CACHE_DISABLE", "2"}}); });
  CHECK(contains(cache, "SWITCHYARD_CACHE_DISABLE is '2'"));
}

TEST_CASE("a bad SWITCHYARD_NORM_KIND names the variable and the known kinds") {
  const std::string message = error_from([] { resolve({{"SWITCHYARD_NORM_KIND", "RMS"}}); });
  CHECK(contains(message, "SWITCHYARD_NORM_KIND is 'RMS', which is not a normalization kind"));
  CHECK(contains(message, "expected LayerNorm, RMSNorm or L2Norm"));
  CHECK(contains(message, "did you mean 'RMSNorm'?"));
}

TEST_CASE("an empty variable counts as unset") {
  const Settings s = resolve({{"SWITCHYARD_CROSS_ENTROPY", ""},
                              {"SWITCHYARD_DETERMINISTIC", " "},
                              {"SWITCHYARD_PLUGIN_PATH", ""}});
  CHECK(s.cross_entropy.source == Source::Default);
  CHECK(s.deterministic.source == Source::Default);
  CHECK(s.plugin_path.empty());
}

TEST_CASE("unknown SWITCHYARD_* variables: a warning with a did-you-mean, never fatal") {
  const Settings s = resolve({{"SWITCHYARD_CROSS_ENTROPHY", "liger"},
                              {"SWITCHYARD_CACHEDIR", "/tmp"},
                              {"SWITCHYARD_BANANA", "1"}});
  CHECK(s.cross_entropy.source == Source::Default);
  auto notes = warnings_containing(s, "SWITCHYARD_CROSS_ENTROPHY is not a Switchyard variable");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "did you mean 'SWITCHYARD_CROSS_ENTROPY'?"));
  notes = warnings_containing(s, "SWITCHYARD_CACHEDIR");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "did you mean 'SWITCHYARD_CACHE_DIR'?"));
  notes = warnings_containing(s, "SWITCHYARD_BANANA");
  REQUIRE(notes.size() == 1);
  CHECK_FALSE(contains(notes[0], "did you mean"));
  CHECK(contains(notes[0],
                 "Switchyard reads SWITCHYARD_PLUGIN_PATH, SWITCHYARD_PLUGIN_SYSTEM_PATH,"));
  CHECK(s.warnings.size() == 3);
}

TEST_CASE("the build scripts' variables are not warned about") {
  const Settings s = resolve({{"SWITCHYARD_BUILD_DIR", "/tmp/b"}, {"SWITCHYARD_JOBS", "2"}});
  CHECK(s.warnings.empty());
}

TEST_CASE("a lower-case switchyard_* variable is pointed at its upper-case name") {
  const Settings s = resolve({{"switchyard_norm", "te"}});
  CHECK(s.norm.source == Source::Default);
  const auto notes = warnings_containing(s, "switchyard_norm is not read");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "did you mean 'SWITCHYARD_NORM'?"));
}

TEST_CASE("SWITCHYARD_OPTION_<PLUGIN>__<KEY> sets a plugin option") {
  const Settings s = resolve({{"SWITCHYARD_OPTION_FUSED__MAX_KERNELS", "64"},
                              {"SWITCHYARD_OPTION_ACME_CE__TILE", "128"},
                              {"SWITCHYARD_OPTION_FUSED_CACHE_DIR", "/x"},
                              {"SWITCHYARD_OPTION_FUSED__", "/y"}});
  REQUIRE(s.plugin_options.count("fused.max_kernels") == 1);
  CHECK(s.plugin_options.at("fused.max_kernels").value == "64");
  CHECK(s.plugin_options.at("fused.max_kernels").origin == "SWITCHYARD_OPTION_FUSED__MAX_KERNELS");
  CHECK(s.plugin_options.at("fused.max_kernels").source == Source::Environment);
  CHECK(s.plugin_options.count("acme_ce.tile") == 1);
  CHECK(s.plugin_options.size() == 2);
  auto notes = warnings_containing(s, "SWITCHYARD_OPTION_FUSED_CACHE_DIR is ignored");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "two underscores"));
  CHECK(warnings_containing(s, "SWITCHYARD_OPTION_FUSED__ is ignored").size() == 1);
}

TEST_CASE("without RuntimeOptions::environment the process environment is read") {
  // A variable no other test reads, set and removed on this (only) thread.
  REQUIRE(::setenv("SWITCHYARD_NORM_KIND", "L2Norm", 1) == 0);
  RuntimeOptions options;
  const Settings s = resolve_settings(options);
  ::unsetenv("SWITCHYARD_NORM_KIND");
  CHECK(s.norm_kind.value == "L2Norm");
  CHECK(s.norm_kind.source == Source::Environment);
}
