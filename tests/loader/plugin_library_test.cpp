// In-process loading: every fault is rejected with a sentence that says what is wrong, and
// plugins built against older and newer ABI minors load and work.
#include "loader_support.hpp"
#include "plugin_library.hpp"

#include <doctest/doctest.h>

using loader_test::fixture_file;
using switchyard::PluginState;
using switchyard::detail::HostServices;
using switchyard::detail::LoadResult;
using switchyard::detail::PluginLibrary;

namespace {

std::shared_ptr<const HostServices> no_options() {
  return std::make_shared<const HostServices>(std::map<std::string, std::string>{});
}

LoadResult load(const std::string& folder, const std::string& plugin) {
  return PluginLibrary::load(fixture_file(folder, plugin), no_options());
}

bool has_forward_collectives(const LoadResult& result) {
  return result.library->cross_entropy()->forward_collectives != nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a healthy plugin loads, validates and probes Ok") {
  const LoadResult result = load("cpu_echo", "cpu_echo");
  REQUIRE_MESSAGE(result.library != nullptr, result.info.reason);
  CHECK(result.info.state == PluginState::Ok);
  CHECK(result.info.reason.empty());
  CHECK(result.info.name == "cpu_echo");
  CHECK(result.info.version == "0.0.1");
  CHECK(result.info.abi_major == 1);
  CHECK(result.info.abi_minor == SY_ABI_MINOR);
  CHECK(result.info.descriptor_struct_size == static_cast<int32_t>(sizeof(sy_plugin)));
  CHECK(result.info.build_info == "fixture built from tests/loader/fixtures/cpu_echo.cpp");
  CHECK(result.info.cross_entropy.offered);
  CHECK(result.info.cross_entropy.determinism == SY_DETERMINISTIC);
  CHECK(result.info.norm.offered);
  CHECK(result.info.norm.features == SY_NORM_FEATURE_RMS);
  // The plugin's debug line went through host->log and was captured.
  REQUIRE(result.info.log.size() == 1);
  CHECK(result.info.log[0] == "debug: entry called");
  // The host-side tables are full-size copies.
  CHECK(result.library->descriptor().struct_size == sizeof(sy_plugin));
  REQUIRE(result.library->cross_entropy() != nullptr);
  CHECK(has_forward_collectives(result));
}

TEST_CASE("a family the plugin does not offer has no table") {
  const LoadResult result = load("cpu_echo", "ce_only");
  REQUIRE(result.library != nullptr);
  CHECK(result.library->cross_entropy() != nullptr);
  CHECK(result.library->norm() == nullptr);
  CHECK_FALSE(result.info.norm.offered);
}

TEST_CASE("a text file named like a plugin is not a shared library") {
  const LoadResult result = load("faults", "junk");
  CHECK(result.library == nullptr);
  CHECK(result.info.state == PluginState::Rejected);
  CHECK(contains(result.info.reason, "libswitchyard-junk.so is not a shared library"));
  CHECK(contains(result.info.reason, "ELF header"));
}

TEST_CASE("a file that does not exist is rejected with its name") {
  const LoadResult result = load("faults", "no_such_plugin");
  CHECK(result.info.state == PluginState::Rejected);
  CHECK(contains(result.info.reason, "libswitchyard-no_such_plugin.so does not exist"));
}

TEST_CASE("a library with an undefined symbol is refused at load time (RTLD_NOW)") {
  const LoadResult result = load("unresolved", "unresolved_symbol");
  CHECK(result.library == nullptr);
  CHECK(result.info.state == PluginState::Rejected);
  CHECK(contains(result.info.reason, "cannot be loaded by the dynamic linker"));
  CHECK(contains(result.info.reason,
                 "undefined symbol: switchyard_fixture_symbol_defined_nowhere"));
}

TEST_CASE("a library without sy_plugin_v1 is rejected") {
  const LoadResult result = load("faults", "no_entry");
  CHECK(result.library == nullptr);
  CHECK(result.info.state == PluginState::Rejected);
  CHECK(contains(result.info.reason, "libswitchyard-no_entry.so has no sy_plugin_v1 symbol"));
}

TEST_CASE("an entry that returns NULL is reported with what the plugin logged") {
  const LoadResult result = load("faults", "refuses_init");
  CHECK(result.library == nullptr);
  CHECK(result.info.state == PluginState::Rejected);
  CHECK(contains(result.info.reason, "refused to initialise"));
  CHECK(contains(result.info.reason, "licence file /opt/fixture/licence.key not found"));
  REQUIRE(result.info.log.size() == 1);
  CHECK(result.info.log[0] == "error: licence file /opt/fixture/licence.key not found");
}

TEST_CASE("a different ABI major names the file and both versions") {
  const LoadResult result = load("faults", "abi_major_two");
  CHECK(result.library == nullptr);
  CHECK(result.info.state == PluginState::Rejected);
  CHECK(result.info.abi_major == 2);
  CHECK(contains(result.info.reason, "libswitchyard-abi_major_two.so was built for ABI 2.3"));
  CHECK(contains(result.info.reason,
                 "this host speaks " + std::to_string(SY_ABI_MAJOR) + "." +
                     std::to_string(SY_ABI_MINOR)));
}

TEST_CASE("a descriptor name that does not match the file name is rejected") {
  const LoadResult result = load("faults", "name_mismatch");
  CHECK(result.library == nullptr);
  CHECK(contains(result.info.reason, "descriptor name 'someone_else'"));
  CHECK(contains(result.info.reason, "'name_mismatch'"));
  CHECK(contains(result.info.reason, "libswitchyard-someone_else.so"));
}

TEST_CASE("a probe that says UNAVAILABLE keeps its reason") {
  const LoadResult result = load("faults", "probe_unavailable");
  REQUIRE(result.library != nullptr);  // valid, loaded, just cannot run here
  CHECK(result.info.state == PluginState::Unavailable);
  CHECK(contains(result.info.reason, "SY_ERR_UNAVAILABLE"));
  CHECK(contains(result.info.reason, "no frobnicator device found on this machine"));
}

TEST_CASE("probe reads its options through the host") {
  auto services = std::make_shared<const HostServices>(
      std::map<std::string, std::string>{{"cpu_echo.probe", "unavailable"}});
  const LoadResult result =
      PluginLibrary::load(fixture_file("cpu_echo", "cpu_echo"), services);
  CHECK(result.info.state == PluginState::Unavailable);
  CHECK(contains(result.info.reason, "option cpu_echo.probe = unavailable"));
  // A wildcard option reaches every plugin; the specific one wins over it.
  auto wildcard = std::make_shared<const HostServices>(
      std::map<std::string, std::string>{{"*.probe", "unavailable"}, {"cpu_echo.probe", "ok"}});
  CHECK(PluginLibrary::load(fixture_file("cpu_echo", "cpu_echo"), wildcard).info.state ==
        PluginState::Ok);
  CHECK(PluginLibrary::load(fixture_file("cpu_echo", "ce_only"), wildcard).info.state ==
        PluginState::Unavailable);
}

TEST_CASE("a plugin built against the frozen v1.0 headers gets the host's defaults") {
  const LoadResult result = load("abi_versions", "built_v1_0");
  REQUIRE_MESSAGE(result.library != nullptr, result.info.reason);
  CHECK(result.info.state == PluginState::Ok);
  CHECK(result.info.abi_minor == 0);
  CHECK(static_cast<size_t>(result.info.descriptor_struct_size) ==
        switchyard::detail::kPluginV1_0Size);
  CHECK(static_cast<size_t>(result.info.cross_entropy.table_struct_size) ==
        switchyard::detail::kCrossEntropyV1_0Size);
  CHECK(result.info.build_info.empty());                     // default: not stated
  CHECK(std::string(result.library->descriptor().build_info).empty());
  CHECK_FALSE(has_forward_collectives(result));  // default: -1
}

TEST_CASE("a plugin built against a future v1.9 has its trailing fields ignored") {
  const LoadResult result = load("abi_versions", "built_v1_9");
  REQUIRE_MESSAGE(result.library != nullptr, result.info.reason);
  CHECK(result.info.state == PluginState::Ok);
  CHECK(result.info.abi_minor == 9);
  CHECK(static_cast<size_t>(result.info.descriptor_struct_size) > sizeof(sy_plugin));
  CHECK(static_cast<size_t>(result.info.cross_entropy.table_struct_size) >
        sizeof(sy_cross_entropy));
  CHECK(static_cast<size_t>(result.info.norm.table_struct_size) > sizeof(sy_norm));
  CHECK(result.info.build_info == "built against the test-only v1.9 headers");
  // The host copies stop at the host's own size.
  CHECK(result.library->descriptor().struct_size == sizeof(sy_plugin));
  CHECK(result.library->cross_entropy()->struct_size == sizeof(sy_cross_entropy));
  CHECK(has_forward_collectives(result));
}
