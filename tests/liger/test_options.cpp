// liger.casting_mode and liger.lse_square_scale: read at the entry point; a bad value makes the
// entry refuse with an ERROR that names the value and what is accepted.
#include "liger_support.hpp"

#include <doctest/doctest.h>

using namespace liger_test;

TEST_CASE("defaults: gemma casting and no z-loss, logged at DEBUG") {
  clear_host_log();
  REQUIRE(load() != nullptr);
  CHECK(logged("DEBUG", {"casting_mode = gemma", "lse_square_scale = 0"}));
  CHECK_FALSE(logged("WARN", {"lse_square_scale"}));
}

TEST_CASE("casting_mode: gemma and llama are accepted; anything else refuses the entry") {
  clear_host_log();
  CHECK(load({{"casting_mode", "gemma"}}) != nullptr);
  CHECK(logged("DEBUG", {"casting_mode = gemma"}));
  clear_host_log();
  CHECK(load({{"casting_mode", "llama"}}) != nullptr);
  CHECK(logged("DEBUG", {"casting_mode = llama"}));
  CHECK(logged("INFO", {"liger.casting_mode = llama", "single-rounding reference"}));
  CHECK(load({{"casting_mode", ""}}) != nullptr);  // empty: the default
  for (const char* bad : {"Gemma", "LLAMA", "fp32", "none", "llama "}) {
    CAPTURE(bad);
    clear_host_log();
    CHECK(load({{"casting_mode", bad}}) == nullptr);
    CHECK(logged("ERROR",
                 {(std::string("liger.casting_mode = \"") + bad + "\"").c_str(), "\"gemma\"",
                  "\"llama\""}));
  }
  CHECK(load() != nullptr);
}

TEST_CASE("lse_square_scale: a finite number >= 0; non-zero warns that check will differ") {
  for (const char* good : {"0", "0.0", "1e-4", "0.5"}) {
    CAPTURE(good);
    clear_host_log();
    CHECK(load({{"lse_square_scale", good}}) != nullptr);
  }
  clear_host_log();
  REQUIRE(load({{"lse_square_scale", "1e-4"}}) != nullptr);
  CHECK(logged("DEBUG", {"lse_square_scale = 0.0001"}));
  CHECK(logged("WARN", {"liger.lse_square_scale = 0.0001", "z-loss", "switchyard check"}));
  clear_host_log();
  REQUIRE(load({{"lse_square_scale", "0"}}) != nullptr);
  CHECK_FALSE(logged("WARN", {"z-loss"}));
  for (const char* bad : {"abc", "-0.1", "nan", "inf", "1e40", "0.1x", " "}) {
    CAPTURE(bad);
    clear_host_log();
    CHECK(load({{"lse_square_scale", bad}}) == nullptr);
    CHECK(logged("ERROR", {(std::string("liger.lse_square_scale = \"") + bad + "\"").c_str(),
                           "finite number >= 0"}));
  }
  CHECK(load() != nullptr);
}

TEST_CASE("the entry point works without a host, or with a host that offers nothing") {
  CHECK(call_entry(nullptr) != nullptr);
  const sy_host bare = {sizeof(sy_host), SY_ABI_MAJOR, SY_ABI_MINOR, "bare", nullptr, nullptr};
  const sy_plugin* plugin = call_entry(&bare);
  REQUIRE(plugin != nullptr);
  sy_error err = make_error();
  sy_ce_problem p = ce_problem(4, 10);
  CHECK(plugin->cross_entropy->supports(&p, &err) == SY_OK);
  REQUIRE(load() != nullptr);
}
