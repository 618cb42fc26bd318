// The INI config file.
#include "settings_test_support.hpp"

#include <doctest/doctest.h>

using namespace switchyard;
using namespace switchyard::test;

TEST_CASE("every key is read, with '<path> [section] key' as origin") {
  LogLevelGuard restore_log_level;
  TempDir dir;
  const std::string config = dir.write("sy.ini",
                                       "# Switchyard\n"
                                       "[cross_entropy]\n"
                                       "backend = liger\n"
                                       "[norm]\n"
                                       "backend = te   # trailing comment\n"
                                       "kind = LayerNorm\n"
                                       "[plugins]\n"
                                       "path = /opt/a:/opt/b\n"
                                       "system_path = /opt/sy\n"
                                       "disable = apex, vendor_*\n"
                                       "[runtime]\n"
                                       "deterministic = true\n"
                                       "log_level = info\n"
                                       "[plugin.fused]\n"
                                       "cache_dir = /scratch/fused\n"
                                       "[plugin.*]\n"
                                       "cache_disable = 1\n");
  const Settings s = resolve({{"SWITCHYARD_CONFIG", config}});
  CHECK(s.cross_entropy.value == "liger");
  CHECK(s.cross_entropy.source == Source::ConfigFile);
  CHECK(s.cross_entropy.origin == config + " [cross_entropy] backend");
  CHECK(s.norm.value == "te");
  CHECK(s.norm_kind.value == "LayerNorm");
  CHECK(s.norm_kind.origin == config + " [norm] kind");
  REQUIRE(s.plugin_path.size() == 2);
  CHECK(s.plugin_path[0].value == "/opt/a");
  CHECK(s.system_path.value == "/opt/sy");
  REQUIRE(s.disable.size() == 2);
  CHECK(s.disable[1].value == "vendor_*");
  CHECK(s.deterministic.value == "1");
  CHECK(s.log_level.value == "info");
  REQUIRE(s.plugin_options.count("fused.cache_dir") == 1);
  CHECK(s.plugin_options.at("fused.cache_dir").value == "/scratch/fused");
  CHECK(s.plugin_options.at("fused.cache_dir").origin == config + " [plugin.fused] cache_dir");
  REQUIRE(s.plugin_options.count("*.cache_disable") == 1);
  CHECK(s.plugin_options.at("*.cache_disable").origin == config + " [plugin.*] cache_disable");
  CHECK(s.warnings.empty());
}

TEST_CASE("relative paths in the file are relative to the file's folder") {
  TempDir dir;
  const std::string config = dir.write("conf/sy.ini",
                                       "[plugins]\npath = plugins:/abs\nsystem_path = ../sys\n"
                                       "[norm]\nbackend = vendor/libswitchyard-acme.so\n"
                                       "[cross_entropy]\nbackend = liger\n");
  const Settings s = resolve({{"SWITCHYARD_CONFIG", config}});
  const std::string folder = (dir.path() / "conf").string();
  REQUIRE(s.plugin_path.size() == 2);
  CHECK(s.plugin_path[0].value == folder + "/plugins");
  CHECK(s.plugin_path[1].value == "/abs");
  CHECK(s.system_path.value == (dir.path() / "sys").string());
  CHECK(s.norm.value == folder + "/vendor/libswitchyard-acme.so");
  CHECK(s.cross_entropy.value == "liger");  // a name, not a path
}

TEST_CASE("unknown keys: a warning with a did-you-mean") {
  TempDir dir;
  const std::string config = dir.write("typo.ini",
                                       "deterministic = 1\n"
                                       "[cross_entropy]\nbackedn = liger\n"
                                       "[runtime]\nlog_levle = info\ncolour = always\n");
  const Settings s = resolve({{"SWITCHYARD_CONFIG", config}});
  CHECK(s.cross_entropy.source == Source::Default);
  CHECK(s.deterministic.source == Source::Default);

  auto notes = warnings_containing(s, "unknown key [cross_entropy] backedn");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], config));
  CHECK(contains(notes[0], "did you mean [cross_entropy] backend?"));
  notes = warnings_containing(s, "[runtime] log_levle");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "did you mean [runtime] log_level?"));
  notes = warnings_containing(s, "unknown key deterministic (outside any [section])");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "did you mean [runtime] deterministic?"));
  notes = warnings_containing(s, "[runtime] colour");
  REQUIRE(notes.size() == 1);
  CHECK_FALSE(contains(notes[0], "did you mean"));
}

TEST_CASE("a malformed plugin section is warned about and ignored") {
  TempDir dir;
  const std::string config = dir.write("p.ini", "[plugin.Fused]\ncache_dir = /x\n");
  const Settings s = resolve({{"SWITCHYARD_CONFIG", config}});
  CHECK(s.plugin_options.empty());
  const auto notes = warnings_containing(s, "[plugin.Fused] cache_dir is ignored");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "'Fused'"));
}

TEST_CASE("a config file that cannot be read names the path and who named it") {
  TempDir dir;
  const std::string missing = (dir.path() / "nope.ini").string();

  std::string message = error_from([&] { resolve({{"SWITCHYARD_CONFIG", missing}}); });
  CHECK(contains(message, "Cannot read the Switchyard config file '" + missing + "'"));
  CHECK(contains(message, "named by SWITCHYARD_CONFIG (environment)"));
  CHECK(contains(message, "No such file or directory"));
  CHECK(contains(message, "unset SWITCHYARD_CONFIG"));

  message = error_from([&] { resolve({}, {"--config", missing}); });
  CHECK(contains(message, "named by --config " + missing + " (command line)"));

  message = error_from([&] {
    RuntimeOptions options = options_with({});
    options.config_file = missing;
    resolve_settings(options);
  });
  CHECK(contains(message, "named by RuntimeOptions::config_file (API)"));

  message = error_from([&] { resolve({{"SWITCHYARD_CONFIG", dir.path().string()}}); });
  CHECK(contains(message, "is a folder, not a file"));
}

TEST_CASE("a line that is not INI names the file") {
  TempDir dir;
  const std::string config = dir.write("bad.ini", "[norm]\nthis line has no equals sign\n");
  const std::string message = error_from([&] { resolve({{"SWITCHYARD_CONFIG", config}}); });
  CHECK(contains(message, "'" + config + "'"));
  CHECK(contains(message, "is not valid"));
  CHECK(contains(message, "this line has no equals sign"));
}

TEST_CASE("bad values in the file name the file, section and key") {
  TempDir dir;
  const std::string config = dir.write("v.ini", "[runtime]\ndeterministic = sometimes\n");
  std::string message = error_from([&] { resolve({{"SWITCHYARD_CONFIG", config}}); });
  CHECK(contains(message,
                 config + " [runtime] deterministic is 'sometimes', which is not a boolean"));

  const std::string kind = dir.write("k.ini", "[norm]\nkind = BatchNorm\n");
  message = error_from([&] { resolve({{"SWITCHYARD_CONFIG", kind}}); });
  CHECK(contains(message, kind + " [norm] kind is 'BatchNorm'"));
}

TEST_CASE("a file with Windows line endings reads the same") {
  TempDir dir;
  const std::string config = dir.write(
      "crlf.ini", "[cross_entropy]\r\nbackend = liger\r\n[runtime]\r\ndeterministic = no\r\n");
  const Settings s = resolve({{"SWITCHYARD_CONFIG", config}});
  CHECK(s.cross_entropy.value == "liger");
  CHECK(s.deterministic.value == "0");
  CHECK(s.warnings.empty());
}
