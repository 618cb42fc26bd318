// The search path and what is found on it, without opening anything.
#include "discovery.hpp"
#include "loader_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using loader_test::fixture;
using loader_test::isolated_options;
using switchyard::PluginState;
using switchyard::Runtime;
using switchyard::SearchLocation;
using switchyard::Source;

namespace {

std::vector<std::string> file_names(const SearchLocation& location) {
  std::vector<std::string> names;
  for (const auto& info : location.candidates) names.push_back(info.file_name);
  return names;
}

}  // namespace

TEST_CASE("the default system folder is next to libswitchyard.so") {
  const std::string folder = switchyard::detail::default_system_path();
  CHECK(std::filesystem::path(folder).filename() == "plugins");
  CHECK(std::filesystem::path(folder).parent_path().filename() == "switchyard");
  // libswitchyard.so lives in the folder above.
  bool found_library = false;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(folder).parent_path().parent_path())) {
    if (entry.path().filename().string().rfind("libswitchyard.so", 0) == 0) found_library = true;
  }
  CHECK(found_library);
}

TEST_CASE("plugin path entries come first, in order, then the system folder") {
  const Runtime runtime(isolated_options({fixture("faults"), "/no/such/folder",
                                          loader_test::fixture_file("cpu_echo", "cpu_echo")}));
  const std::vector<SearchLocation> locations = runtime.discover(false);
  REQUIRE(locations.size() == 4);

  CHECK(locations[0].path == fixture("faults"));
  CHECK(locations[0].exists);
  CHECK(locations[0].origin.source == Source::Api);
  CHECK(file_names(locations[0]) ==
        std::vector<std::string>{"libswitchyard-abi_major_two.so", "libswitchyard-junk.so",
                                 "libswitchyard-name_mismatch.so", "libswitchyard-no_entry.so",
                                 "libswitchyard-probe_unavailable.so",
                                 "libswitchyard-refuses_init.so",
                                 "libswitchyard-throws_forward.so"});
  CHECK(locations[0].candidates[1].name == "junk");  // from the file name: nothing opened

  CHECK(locations[1].path == "/no/such/folder");
  CHECK_FALSE(locations[1].exists);
  CHECK(locations[1].candidates.empty());

  // A file entry is its own single candidate.
  REQUIRE(locations[2].candidates.size() == 1);
  CHECK(locations[2].candidates[0].name == "cpu_echo");

  CHECK(locations[3].path == fixture("empty"));
  CHECK(locations[3].origin.source == Source::Environment);
  CHECK(locations[3].candidates.empty());
}

TEST_CASE("SWITCHYARD_DISABLE globs mark candidates Disabled and they are never opened") {
  const Runtime runtime(isolated_options({fixture("crash"), fixture("faults")},
                                         {{"SWITCHYARD_DISABLE", "crash*,junk"}}));
  // Loading everything would report the crasher as Crashed; disabled, it is not even tried.
  const std::vector<SearchLocation> locations = runtime.discover(true);
  REQUIRE(locations.size() == 3);
  const auto& crash = locations[0].candidates;
  REQUIRE(crash.size() == 2);
  CHECK(crash[0].name == "crashes_on_load");
  CHECK(crash[0].state == PluginState::Disabled);
  CHECK(crash[0].reason.find("'crash*'") != std::string::npos);
  CHECK(crash[0].reason.find("SWITCHYARD_DISABLE") != std::string::npos);
  CHECK(crash[1].name == "neighbour");
  CHECK(crash[1].state == PluginState::Ok);
  CHECK(locations[1].candidates[1].name == "junk");
  CHECK(locations[1].candidates[1].state == PluginState::Disabled);
}

TEST_CASE("discover(load) loads every candidate in a child: the crasher cannot take us down") {
  const Runtime runtime(isolated_options({fixture("crash"), fixture("faults")}));
  const std::vector<SearchLocation> locations = runtime.discover(true);
  REQUIRE(locations.size() == 3);
  const auto& crash = locations[0].candidates;
  REQUIRE(crash.size() == 2);
  CHECK(crash[0].state == PluginState::Crashed);
  CHECK(crash[0].reason.find("signal 11") != std::string::npos);
  CHECK(crash[1].state == PluginState::Ok);

  std::map<std::string, PluginState> states;
  for (const auto& info : locations[1].candidates) states[info.file_name] = info.state;
  CHECK(states.at("libswitchyard-junk.so") == PluginState::Rejected);
  CHECK(states.at("libswitchyard-no_entry.so") == PluginState::Rejected);
  CHECK(states.at("libswitchyard-refuses_init.so") == PluginState::Rejected);
  CHECK(states.at("libswitchyard-abi_major_two.so") == PluginState::Rejected);
  CHECK(states.at("libswitchyard-name_mismatch.so") == PluginState::Rejected);
  CHECK(states.at("libswitchyard-probe_unavailable.so") == PluginState::Unavailable);
  CHECK(states.at("libswitchyard-throws_forward.so") == PluginState::Ok);
}

TEST_CASE("inspect finds a plugin by name or by path, in a child process") {
  const Runtime runtime(isolated_options({fixture("crash"), fixture("cpu_echo")}));
  const auto by_name = runtime.inspect("cpu_echo");
  CHECK(by_name.state == PluginState::Ok);
  CHECK(by_name.path == loader_test::fixture_file("cpu_echo", "cpu_echo"));
  const auto crashed = runtime.inspect(loader_test::fixture_file("crash", "crashes_on_load"));
  CHECK(crashed.state == PluginState::Crashed);
  const auto missing = runtime.inspect("not_here");
  CHECK(missing.state == PluginState::Rejected);
  CHECK(missing.reason.find("libswitchyard-not_here.so") != std::string::npos);
  CHECK(missing.reason.find(fixture("cpu_echo")) != std::string::npos);
}
