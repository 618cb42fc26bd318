// Loading in a child process: crashes and hangs are contained and reported; what a healthy
// child finds comes back intact.
#include "isolated_load.hpp"
#include "loader_support.hpp"

#include <doctest/doctest.h>

#include <chrono>

using loader_test::fixture_file;
using switchyard::PluginInfo;
using switchyard::PluginState;
using switchyard::detail::HostServices;
using switchyard::detail::isolated_load;

namespace {

const HostServices& no_options() {
  static const HostServices services{std::map<std::string, std::string>{}};
  return services;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a plugin that segfaults while loading is reported as Crashed, with its path") {
  const std::string path = fixture_file("crash", "crashes_on_load");
  const PluginInfo info = isolated_load(path, no_options());
  CHECK(info.state == PluginState::Crashed);
  CHECK(info.path == path);
  CHECK(info.file_name == "libswitchyard-crashes_on_load.so");
  CHECK(info.name == "crashes_on_load");
  CHECK(contains(info.reason, "crashed while loading (signal 11, Segmentation fault)"));
}

TEST_CASE("a plugin that hangs while loading is killed after the time-out") {
  const auto start = std::chrono::steady_clock::now();
  const PluginInfo info = isolated_load(fixture_file("hang", "hangs_on_load"), no_options(),
                                        std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(info.state == PluginState::Crashed);
  CHECK(contains(info.reason, "did not finish loading within 300 ms"));
  CHECK(contains(info.reason, "killed"));
  CHECK(took < std::chrono::seconds(5));
}

TEST_CASE("a healthy plugin's description comes back from the child intact") {
  const PluginInfo info = isolated_load(fixture_file("cpu_echo", "cpu_echo"), no_options());
  CHECK(info.state == PluginState::Ok);
  CHECK(info.name == "cpu_echo");
  CHECK(info.version == "0.0.1");
  CHECK(info.vendor == "switchyard tests");
  CHECK(info.build_info == "fixture built from tests/loader/fixtures/cpu_echo.cpp");
  CHECK(info.cross_entropy.offered);
  CHECK(info.cross_entropy.devices == SY_DEVICE_BIT(kDLCPU));
  CHECK(info.norm.offered);
  REQUIRE(info.log.size() == 1);
  CHECK(info.log[0] == "debug: entry called");
}

TEST_CASE("the child captures what a refusing plugin logged, and sees the options") {
  const PluginInfo refused = isolated_load(fixture_file("faults", "refuses_init"), no_options());
  CHECK(refused.state == PluginState::Rejected);
  CHECK(contains(refused.reason, "licence file /opt/fixture/licence.key not found"));

  const HostServices services{{{"cpu_echo.probe", "unavailable"}}};
  const PluginInfo unavailable = isolated_load(fixture_file("cpu_echo", "cpu_echo"), services);
  CHECK(unavailable.state == PluginState::Unavailable);
  CHECK(contains(unavailable.reason, "option cpu_echo.probe = unavailable"));
}

TEST_CASE("PluginInfo survives serialization; damaged bytes are refused") {
  PluginInfo info;
  info.path = "/p/libswitchyard-x.so";
  info.file_name = "libswitchyard-x.so";
  info.name = "x";
  info.version = "1.2.3";
  info.vendor = "v";
  info.description = std::string("with\0nul", 8);
  info.build_info = "b";
  info.abi_major = 1;
  info.abi_minor = 7;
  info.descriptor_struct_size = 123;
  info.state = PluginState::Unavailable;
  info.reason = "r";
  info.log = {"warn: a", "error: b"};
  info.cross_entropy = {true, 7, 1u << 2, 0x80000001u, SY_NONDETERMINISTIC, 99};
  info.norm = {false, 0, 0, 0, SY_DETERMINISM_UNKNOWN, 0};

  const std::string bytes = switchyard::detail::serialize_plugin_info(info);
  PluginInfo back;
  REQUIRE(switchyard::detail::deserialize_plugin_info(bytes, &back));
  CHECK(back.path == info.path);
  CHECK(back.description == info.description);
  CHECK(back.abi_minor == 7);
  CHECK(back.descriptor_struct_size == 123);
  CHECK(back.state == PluginState::Unavailable);
  CHECK(back.log == info.log);
  CHECK(back.cross_entropy.features == 0x80000001u);
  CHECK(back.cross_entropy.determinism == SY_NONDETERMINISTIC);
  CHECK(back.cross_entropy.table_struct_size == 99);
  CHECK_FALSE(back.norm.offered);

  PluginInfo untouched;
  CHECK_FALSE(switchyard::detail::deserialize_plugin_info(bytes.substr(0, bytes.size() - 1),
                                                          &untouched));
  CHECK_FALSE(switchyard::detail::deserialize_plugin_info("garbage", &untouched));
  CHECK(untouched.path.empty());
}
