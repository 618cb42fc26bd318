// Megatron-LM's flags keep their meaning (DESIGN.md §5).
#include "settings_test_support.hpp"

#include <doctest/doctest.h>

using namespace switchyard;
using namespace switchyard::test;

TEST_CASE("--cross-entropy-loss-fusion and --cross-entropy-fusion-impl") {
  struct Case {
    std::vector<std::string> args;
    std::string backend, origin;
  };
  const std::vector<Case> cases{
      {{"--cross-entropy-loss-fusion"}, "fused", "--cross-entropy-loss-fusion"},
      {{"--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "native"},
       "fused",
       "--cross-entropy-loss-fusion --cross-entropy-fusion-impl native"},
      {{"--cross-entropy-fusion-impl=te", "--cross-entropy-loss-fusion"},
       "te",
       "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te"},
      {{"--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "liger"},
       "liger",
       "--cross-entropy-loss-fusion --cross-entropy-fusion-impl liger"},
      {{"--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "acme_ce2"},
       "acme_ce2",
       "--cross-entropy-loss-fusion --cross-entropy-fusion-impl acme_ce2"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.origin);
    const Settings s = resolve({}, c.args);
    CHECK(s.cross_entropy.value == c.backend);
    CHECK(s.cross_entropy.source == Source::CommandLine);
    CHECK(s.cross_entropy.origin == c.origin);
    CHECK(s.cross_entropy.fallback.empty());
    CHECK(s.warnings.empty());
  }
}

TEST_CASE("no Megatron flag: nothing is decided on the command line") {
  const Settings s = resolve({{"SWITCHYARD_CROSS_ENTROPY", "liger"}}, {"--num-layers", "2"});
  CHECK(s.cross_entropy.value == "liger");
  CHECK(s.cross_entropy.source == Source::Environment);
}

TEST_CASE("an implementation without the fusion switch is ignored, as Megatron does") {
  const Settings s = resolve({}, {"--cross-entropy-fusion-impl", "te"});
  CHECK(s.cross_entropy.value == "native");
  CHECK(s.cross_entropy.source == Source::CommandLine);
  CHECK(s.cross_entropy.origin ==
        "--cross-entropy-fusion-impl te without --cross-entropy-loss-fusion");
  const auto notes = warnings_containing(s,
                                         "--cross-entropy-fusion-impl te has no effect without "
                                         "--cross-entropy-loss-fusion");
  CHECK(notes.size() == 1);
}

TEST_CASE("an invalid --cross-entropy-fusion-impl lists the known values") {
  std::string message = error_from([] {
    resolve({}, {"--cross-entropy-loss-fusion", "--cross-entropy-fusion-impl", "TE"});
  });
  CHECK(contains(message, "--cross-entropy-fusion-impl 'TE' is not a backend name"));
  CHECK(contains(message, "expected native, te, liger or the name of an installed plugin"));
  CHECK(contains(message, "did you mean 'te'?"));
  CHECK(contains(message, "--cross-entropy <path>"));

  // Checked even without the fusion switch: Megatron's parser would refuse it too.
  message = error_from([] { resolve({}, {"--cross-entropy-fusion-impl", "./libx.so"}); });
  CHECK(contains(message, "'./libx.so' is not a backend name"));
}

TEST_CASE("--transformer-impl picks the norm backend") {
  Settings s = resolve({}, {"--transformer-impl", "transformer_engine"});
  CHECK(s.norm.value == "te");
  CHECK(s.norm.origin == "--transformer-impl transformer_engine");
  CHECK(s.norm.fallback.empty());

  s = resolve({}, {"--transformer-impl=local"});
  CHECK(s.norm.value == "apex");
  CHECK(s.norm.fallback == "native");
  CHECK(s.norm.source == Source::CommandLine);
  CHECK(s.norm.origin == "--transformer-impl local");
  CHECK(s.cross_entropy.source == Source::Default);  // it says nothing about the loss
}

TEST_CASE("an invalid --transformer-impl lists the known values") {
  const std::string message = error_from([] {
    resolve({}, {"--transformer-impl", "transformer-engine"});
  });
  CHECK(contains(message, "--transformer-impl 'transformer-engine' is not valid"));
  CHECK(contains(message, "expected local or transformer_engine"));
  CHECK(contains(message, "did you mean 'transformer_engine'?"));
}

TEST_CASE("Switchyard's own flags win over Megatron's, and say so") {
  const Settings s = resolve({}, {"--transformer-impl", "local", "--norm", "liger",
                                  "--cross-entropy-loss-fusion", "--cross-entropy", "native"});
  CHECK(s.norm.value == "liger");
  CHECK(s.norm.fallback.empty());
  CHECK(s.cross_entropy.value == "native");
  CHECK(s.cross_entropy.origin == "--cross-entropy native");
  CHECK(warnings_containing(s, "--norm liger overrides --transformer-impl local").size() == 1);
  CHECK(warnings_containing(s, "--cross-entropy native overrides --cross-entropy-loss-fusion")
            .size() == 1);
}

TEST_CASE("a Megatron flag overriding the environment is pointed out") {
  const Settings s =
      resolve({{"SWITCHYARD_NORM", "liger"}, {"SWITCHYARD_CROSS_ENTROPY", "fused"}},
              {"--transformer-impl", "transformer_engine", "--cross-entropy-loss-fusion"});
  CHECK(s.norm.value == "te");
  const auto notes = warnings_containing(s, "overrides SWITCHYARD_NORM = 'liger'");
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "pass --norm liger"));
  // Same value from both: nothing to point out.
  CHECK(warnings_containing(s, "SWITCHYARD_CROSS_ENTROPY").empty());
}
