// Switchyard's own flags in a trainer's argv: both spellings, foreign arguments skipped,
// missing values and bad values reported with the flag's name.
#include "settings_test_support.hpp"

#include <doctest/doctest.h>

#include <set>

using namespace switchyard;
using namespace switchyard::test;

TEST_CASE("selection flags are read from a whole trainer argv; the rest is ignored") {
  const std::vector<std::string> argv{"--num-layers",
                                      "24",
                                      "--lr=3e-4",
                                      "--data-cache-path=",
                                      "-v",
                                      "--seed",
                                      "-1",
                                      "--norm",
                                      "te",
                                      "--cross-entropy=liger",
                                      "--normalization",
                                      "LayerNorm",
                                      "--plugin-option",
                                      "fused.cache_dir=/tmp/c",
                                      "positional.txt",
                                      "--deterministic",
                                      "--log-level",
                                      "warn"};
  const Settings s = resolve({}, argv);
  CHECK(s.norm.value == "te");
  CHECK(s.norm.origin == "--norm te");
  CHECK(s.cross_entropy.value == "liger");
  CHECK(s.cross_entropy.origin == "--cross-entropy liger");
  CHECK(s.norm_kind.value == "LayerNorm");
  CHECK(s.norm_kind.origin == "--normalization LayerNorm");
  CHECK(s.deterministic.value == "1");
  REQUIRE(s.plugin_options.count("fused.cache_dir") == 1);
  CHECK(s.plugin_options.at("fused.cache_dir").value == "/tmp/c");
  CHECK(s.plugin_options.at("fused.cache_dir").origin == "--plugin-option fused.cache_dir=/tmp/c");
  CHECK(s.log_level.source == Source::CommandLine);
  CHECK(s.warnings.empty());
}

TEST_CASE("a flag given twice: the last one wins; --norm-kind and --normalization are one") {
  const Settings s = resolve(
      {}, {"--norm", "apex", "--norm-kind", "rmsnorm", "--norm=te", "--normalization=l2norm"});
  CHECK(s.norm.value == "te");
  CHECK(s.norm_kind.value == "L2Norm");  // canonical spelling
  CHECK(s.norm_kind.origin == "--normalization l2norm");
}

TEST_CASE("no abbreviations, no case folding, and nothing after --") {
  const Settings s = resolve(
      {}, {"--norm-k", "LayerNorm", "--Norm", "te", "--log", "debug", "--", "--norm", "apex"});
  CHECK(s.norm.source == Source::Default);
  CHECK(s.norm_kind.source == Source::Default);
  CHECK(s.log_level.source == Source::Default);
}

TEST_CASE("a flag without its value is an error that names the flag") {
  std::string message = error_from([] { resolve({}, {"--lr", "1", "--norm"}); });
  CHECK(contains(message, "--norm needs a value"));
  CHECK(contains(message, "it is the last argument"));

  message = error_from([] { resolve({}, {"--cross-entropy", "--deterministic"}); });
  CHECK(contains(message, "--cross-entropy needs a value"));
  CHECK(contains(message, "followed by --deterministic"));

  message = error_from([] { resolve({}, {"--norm="}); });
  CHECK(contains(message, "--norm"));

  message = error_from([] { resolve({}, {"--deterministic=1"}); });
  CHECK(contains(message, "deterministic"));
  CHECK(contains(message, "does not take any arguments"));
}

TEST_CASE("bad values on the command line") {
  std::string message = error_from([] { resolve({}, {"--norm-kind", "RMSNrom"}); });
  CHECK(contains(message, "--norm-kind is 'RMSNrom'"));
  CHECK(contains(message, "LayerNorm, RMSNorm or L2Norm"));
  CHECK(contains(message, "did you mean 'RMSNorm'?"));

  message = error_from([] { resolve({}, {"--plugin-option", "fused.cache_dir"}); });
  CHECK(contains(message, "--plugin-option fused.cache_dir"));
  CHECK(contains(message, "has no '='"));

  message = error_from([] { resolve({}, {"--plugin-option", "Fused.cache_dir=/x"}); });
  CHECK(contains(message, "'Fused'"));
  CHECK(contains(message, "[a-z0-9_]+"));

  // A log level is not worth failing a job for: warned about and ignored.
  const Settings s = resolve({}, {"--log-level", "verbose"});
  CHECK(s.log_level.source == Source::Default);
  CHECK(warnings_containing(s, "--log-level is 'verbose', which is not a log level").size() == 1);
}

TEST_CASE("--deterministic-mode (Megatron) means --deterministic") {
  const Settings s = resolve({}, {"--deterministic-mode"});
  CHECK(s.deterministic.value == "1");
  CHECK(s.deterministic.origin == "--deterministic-mode");
}

TEST_CASE("selection_flags() lists every flag read, with switches marked") {
  std::set<std::string> values, switches;
  for (const FlagSpec& flag : selection_flags()) {
    CHECK_FALSE(flag.help.empty());
    CHECK(flag.name.rfind("--", 0) != 0);
    (flag.takes_value ? values : switches).insert(flag.name);
  }
  for (const char* name :
       {"cross-entropy", "norm", "norm-kind", "normalization", "plugin-path", "config",
        "plugin-option", "log-level", "cross-entropy-fusion-impl", "transformer-impl"})
    CHECK_MESSAGE(values.count(name) == 1, name);
  for (const char* name : {"deterministic", "cross-entropy-loss-fusion", "deterministic-mode"})
    CHECK_MESSAGE(switches.count(name) == 1, name);
  CHECK(values.size() + switches.size() == selection_flags().size());  // no duplicates

  // Every listed switch is really read: it changes a setting.
  for (const FlagSpec& flag : selection_flags()) {
    CAPTURE(flag.name);
    if (!flag.takes_value) {
      const Settings s = resolve({}, {"--" + flag.name});
      const bool changed = s.deterministic.source == Source::CommandLine ||
                           s.cross_entropy.source == Source::CommandLine;
      CHECK(changed);
    }
  }
}
