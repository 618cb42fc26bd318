// Backend names, deprecated aliases and the plugin file rule.
#include "backend_names.hpp"

#include <doctest/doctest.h>

using namespace switchyard::detail;

TEST_CASE("the built-in backends") {
  CHECK(builtin_backends() == std::vector<std::string>{"native", "fused", "apex", "liger", "te"});
  for (const std::string& name : builtin_backends()) {
    CHECK(valid_plugin_name(name));
    CHECK_FALSE(renamed_backend(name));
  }
}

TEST_CASE("deprecated names map to their new names") {
  CHECK(renamed_backend("megatron") == std::optional<std::string>("native"));
  CHECK(renamed_backend("megatron_fused") == std::optional<std::string>("fused"));
  CHECK(renamed_backend("fused_layer_norm") == std::optional<std::string>("apex"));
  CHECK(renamed_backend("torch_norm") == std::optional<std::string>("native"));
  CHECK(renamed_backend("transformer_engine") == std::optional<std::string>("te"));
  CHECK_FALSE(renamed_backend("Megatron"));
  CHECK_FALSE(renamed_backend("acme"));
  CHECK_FALSE(renamed_backend(""));
}

TEST_CASE("plugin names are [a-z0-9_]+") {
  for (const char* good : {"native", "te", "acme_ce2", "0", "_"})
    CHECK_MESSAGE(valid_plugin_name(good), good);
  for (const char* bad : {"", "Native", "fused-ce", "a.b", "a b", "lib/x", "é"})
    CHECK_FALSE_MESSAGE(valid_plugin_name(bad), bad);
}

TEST_CASE("file names") {
  CHECK(plugin_file_name("liger") == "libswitchyard-liger.so");
  CHECK(plugin_name_from_file("libswitchyard-liger.so") == std::optional<std::string>("liger"));
  CHECK(plugin_name_from_file(plugin_file_name("acme_2")) == std::optional<std::string>("acme_2"));
  for (const char* bad : {"libswitchyard-.so", "libswitchyard-Liger.so", "libswitchyard-liger.so.1",
                          "liblinger.so", "switchyard-te.so", "libswitchyard-te.dylib",
                          "libswitchyard-te-2.so", "libswitchyard-te.so.bak"})
    CHECK_FALSE_MESSAGE(plugin_name_from_file(bad), bad);
}

TEST_CASE("values that name a file rather than a backend") {
  CHECK(looks_like_path("/opt/libswitchyard-acme.so"));
  CHECK(looks_like_path("./x"));
  CHECK(looks_like_path("libswitchyard-acme.so"));
  CHECK_FALSE(looks_like_path("native"));
  CHECK_FALSE(looks_like_path("so"));
  CHECK_FALSE(looks_like_path("also"));
}
