// Plugin options: how option("fused", "cache_dir") resolves.
#include "plugin_options.hpp"
#include "settings_test_support.hpp"

#include <doctest/doctest.h>

using namespace switchyard;
using namespace switchyard::test;
using detail::find_plugin_option;

TEST_CASE("the same source: the plugin-specific option beats the wildcard") {
  RuntimeOptions options = options_with({});
  options.plugin_options = {{"*.cache_dir", "/all"}, {"fused.cache_dir", "/fused"}};
  const Settings s = resolve_settings(options);
  const Setting* fused = find_plugin_option(s.plugin_options, "fused", "cache_dir");
  REQUIRE(fused != nullptr);
  CHECK(fused->value == "/fused");
  CHECK(fused->origin == "RuntimeOptions::plugin_options[fused.cache_dir]");
  const Setting* other = find_plugin_option(s.plugin_options, "acme", "cache_dir");
  REQUIRE(other != nullptr);
  CHECK(other->value == "/all");
  CHECK(find_plugin_option(s.plugin_options, "fused", "tile") == nullptr);
}

TEST_CASE("different sources: the higher source wins, wildcard or not") {
  TempDir dir;
  const std::string config = dir.write("p.ini", "[plugin.fused]\ncache_dir = /from-file\n");

  // SWITCHYARD_CACHE_DIR (environment, every plugin) beats the file's [plugin.fused].
  Settings s = resolve({{"SWITCHYARD_CONFIG", config}, {"SWITCHYARD_CACHE_DIR", "/from-env"}});
  const Setting* fused = find_plugin_option(s.plugin_options, "fused", "cache_dir");
  REQUIRE(fused != nullptr);
  CHECK(fused->value == "/from-env");
  CHECK(fused->origin == "SWITCHYARD_CACHE_DIR");
  // The shadowed entry is dropped, so a plain specific-else-wildcard lookup agrees.
  CHECK(s.plugin_options.count("fused.cache_dir") == 0);

  // A specific option from a higher source than the wildcard stays.
  s = resolve({{"SWITCHYARD_CACHE_DIR", "/from-env"}},
              {"--plugin-option", "fused.cache_dir=/from-cli"});
  fused = find_plugin_option(s.plugin_options, "fused", "cache_dir");
  REQUIRE(fused != nullptr);
  CHECK(fused->value == "/from-cli");
  CHECK(fused->source == Source::CommandLine);
  CHECK(find_plugin_option(s.plugin_options, "te", "cache_dir")->value == "/from-env");

  // The same name from two sources: the higher one.
  s = resolve({{"SWITCHYARD_CONFIG", config}, {"SWITCHYARD_OPTION_FUSED__CACHE_DIR", "/env-fused"}},
              {});
  CHECK(find_plugin_option(s.plugin_options, "fused", "cache_dir")->value == "/env-fused");
}

TEST_CASE("find_plugin_option compares sources directly too") {
  std::map<std::string, Setting> options;
  Setting wildcard;
  wildcard.value = "/w";
  wildcard.source = Source::Environment;
  Setting specific;
  specific.value = "/s";
  specific.source = Source::ConfigFile;
  options["*.k"] = wildcard;
  options["p.k"] = specific;
  CHECK(find_plugin_option(options, "p", "k")->value == "/w");
  options["p.k"].source = Source::Environment;
  CHECK(find_plugin_option(options, "p", "k")->value == "/s");
}

TEST_CASE("malformed option names from the API are errors") {
  for (const char* bad : {"cache_dir", "Fused.cache_dir", "fused.Cache-Dir", "fused."}) {
    CAPTURE(bad);
    RuntimeOptions options = options_with({});
    options.plugin_options = {{bad, "x"}};
    const std::string message = error_from([&] { resolve_settings(options); });
    CHECK(contains(message, "RuntimeOptions::plugin_options"));
    CHECK(contains(message, std::string("'")));
  }
}

TEST_CASE("parse_plugin_option_name") {
  std::string problem;
  auto name = detail::parse_plugin_option_name("fused.cache_dir", &problem);
  REQUIRE(name);
  CHECK(name->plugin == "fused");
  CHECK(name->key == "cache_dir");
  name = detail::parse_plugin_option_name("*.cache_dir", &problem);
  REQUIRE(name);
  CHECK(name->plugin == "*");
  CHECK_FALSE(detail::parse_plugin_option_name("fused", &problem));
  CHECK(contains(problem, "expected <plugin>.<key>"));
  CHECK_FALSE(detail::parse_plugin_option_name("a.b.c", &problem));
  CHECK(contains(problem, "'b.c'"));
}
