// Selection (DESIGN §5): names and paths, the first match on the search path, lazy opening,
// deprecated names, fallback, determinism, and the error text when nothing usable is found.
#include "loader_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using loader_test::fixture;
using loader_test::fixture_file;
using loader_test::isolated_options;
using switchyard::Error;
using switchyard::Family;
using switchyard::Runtime;
using switchyard::Selection;

namespace {

// The message of the Error that select() throws; fails the test when it does not throw.
std::string selection_error(const Runtime& runtime, Family family, sy_status expected_status) {
  try {
    const Selection selection = runtime.select(family);
    FAIL("select() succeeded with " << selection.resolved_name);
  } catch (const Error& e) {
    CHECK(e.status() == expected_status);
    return e.what();
  }
  return {};
}

#define CHECK_CONTAINS(text, part) \
  CHECK_MESSAGE((text).find(part) != std::string::npos, "missing: " << (part))

std::string mapped_files() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str();
}

}  // namespace

TEST_CASE("a missing backend's error has every part a user needs") {
  const Runtime runtime(
      isolated_options({fixture("faults"), "/no/such/folder", fixture("cpu_echo")},
                       {{"SWITCHYARD_CROSS_ENTROPY", "cpu_ecko"}}));
  const std::string message = selection_error(runtime, Family::CrossEntropy, SY_ERR_UNAVAILABLE);
  INFO(message);
  // What was requested, and where the request came from.
  CHECK_CONTAINS(message, "No usable cross_entropy backend");
  CHECK_CONTAINS(message, "cpu_ecko (environment: SWITCHYARD_CROSS_ENTROPY)");
  CHECK_CONTAINS(message, "no file named libswitchyard-cpu_ecko.so was found");
  CHECK_CONTAINS(message, "(did you mean 'cpu_echo'?)");
  // Every folder searched, with what was found there and why each candidate was skipped.
  CHECK_CONTAINS(message, "Searched, in order:");
  CHECK_CONTAINS(message, fixture("faults") + " (API: RuntimeOptions::plugin_path): 7 plugin files");
  CHECK_CONTAINS(message, "/no/such/folder (API: RuntimeOptions::plugin_path): does not exist");
  CHECK_CONTAINS(message, fixture("cpu_echo") + " (API: RuntimeOptions::plugin_path): 2 plugin files");
  CHECK_CONTAINS(message, fixture("empty") + " (environment: SWITCHYARD_PLUGIN_SYSTEM_PATH): no libswitchyard-*.so files");
  CHECK_CONTAINS(message, "libswitchyard-junk.so: rejected: is not a shared library");
  CHECK_CONTAINS(message, "libswitchyard-no_entry.so: rejected: has no sy_plugin_v1 symbol");
  CHECK_CONTAINS(message, "libswitchyard-refuses_init.so: rejected: the plugin refused to initialise");
  CHECK_CONTAINS(message, "licence file /opt/fixture/licence.key not found");
  CHECK_CONTAINS(message, "libswitchyard-abi_major_two.so: rejected: was built for ABI 2.3");
  CHECK_CONTAINS(message, "libswitchyard-name_mismatch.so: rejected: descriptor name 'someone_else'");
  CHECK_CONTAINS(message, "libswitchyard-probe_unavailable.so: unavailable:");
  CHECK_CONTAINS(message, "no frobnicator device found on this machine");
  CHECK_CONTAINS(message, "libswitchyard-cpu_echo.so: cpu_echo 0.0.1, ok, offers cross_entropy and norm");
  // The backends that are available, in search order, and the next step.
  CHECK_CONTAINS(message, "Available cross_entropy backends: throws_forward, ce_only, cpu_echo.");
  CHECK_CONTAINS(message, "Next step:");
  CHECK_CONTAINS(message, "SWITCHYARD_PLUGIN_PATH=<folder with libswitchyard-cpu_ecko.so>");
  CHECK_CONTAINS(message, "SWITCHYARD_CROSS_ENTROPY=throws_forward");
  CHECK_CONTAINS(message, "switchyard doctor");
}

TEST_CASE("a backend whose probe refuses is named with its reason") {
  const Runtime runtime(isolated_options({fixture("faults")}, {{"SWITCHYARD_NORM", "probe_unavailable"}}));
  const std::string message = selection_error(runtime, Family::Norm, SY_ERR_UNAVAILABLE);
  INFO(message);
  CHECK_CONTAINS(message, "probe_unavailable (environment: SWITCHYARD_NORM)");
  CHECK_CONTAINS(message, fixture_file("faults", "probe_unavailable") + " cannot run here");
  CHECK_CONTAINS(message, "no frobnicator device found on this machine");
  CHECK_CONTAINS(message, "Available norm backends: throws_forward.");
  CHECK_CONTAINS(message, "Next step: fix the reason above on this machine");
}

TEST_CASE("a rejected, a disabled and a family-less backend each say so") {
  SUBCASE("rejected") {
    switchyard::RuntimeOptions options = isolated_options({fixture("faults"), fixture("cpu_echo")});
    options.cross_entropy = "abi_major_two";
    const std::string message =
        selection_error(Runtime(options), Family::CrossEntropy, SY_ERR_UNAVAILABLE);
    CHECK_CONTAINS(message, "abi_major_two (API: RuntimeOptions::cross_entropy)");
    CHECK_CONTAINS(message, "cannot be used: libswitchyard-abi_major_two.so was built for ABI 2.3");
    CHECK_CONTAINS(message, "rebuild or replace libswitchyard-abi_major_two.so");
  }
  SUBCASE("disabled") {
    switchyard::RuntimeOptions options =
        isolated_options({fixture("cpu_echo")}, {{"SWITCHYARD_DISABLE", "cpu_*"}});
    options.cross_entropy = "cpu_echo";
    const std::string message =
        selection_error(Runtime(options), Family::CrossEntropy, SY_ERR_UNAVAILABLE);
    CHECK_CONTAINS(message, "disabled by pattern 'cpu_*' (environment: SWITCHYARD_DISABLE)");
    CHECK_CONTAINS(message, "remove the matching pattern from SWITCHYARD_DISABLE");
  }
  SUBCASE("family not offered") {
    switchyard::RuntimeOptions options = isolated_options({fixture("cpu_echo")});
    options.norm = "ce_only";
    const std::string message = selection_error(Runtime(options), Family::Norm, SY_ERR_UNSUPPORTED);
    CHECK_CONTAINS(message, "plugin 'ce_only' (" + fixture_file("cpu_echo", "ce_only") +
                                ") does not offer norm; it offers cross_entropy only");
    CHECK_CONTAINS(message, "Available norm backends: cpu_echo.");
  }
  SUBCASE("a path that does not exist") {
    switchyard::RuntimeOptions options = isolated_options({});
    options.norm = fixture("nowhere") + "/libswitchyard-gone.so";
    const std::string message = selection_error(Runtime(options), Family::Norm, SY_ERR_UNAVAILABLE);
    CHECK_CONTAINS(message, "No norm backend is available on this search path.");
    CHECK_CONTAINS(message, "the file " + fixture("nowhere") + "/libswitchyard-gone.so does not exist");
    CHECK_CONTAINS(message, "Next step: correct the path");
  }
}

TEST_CASE("the first match in search order wins, and a path selects that file") {
  switchyard::RuntimeOptions options = isolated_options({fixture("crash"), fixture("cpu_echo")});
  options.norm = "neighbour";
  options.cross_entropy = fixture_file("cpu_echo", "cpu_echo");
  const Runtime runtime(options);
  const Selection norm = runtime.select(Family::Norm);
  CHECK(norm.resolved_name == "neighbour");
  CHECK(norm.plugin.path == fixture_file("crash", "neighbour"));
  CHECK(norm.notes.empty());
  const Selection ce = runtime.select(Family::CrossEntropy);
  CHECK(ce.resolved_name == "cpu_echo");
  CHECK(ce.requested.value == fixture_file("cpu_echo", "cpu_echo"));
}

TEST_CASE("selection opens only the selected file, even next to a plugin that crashes") {
  switchyard::RuntimeOptions options = isolated_options({fixture("crash")});
  options.norm = "neighbour";
  const Runtime runtime(options);
  // Opening libswitchyard-crashes_on_load.so in this process would kill it here.
  const switchyard::Norm norm = runtime.norm(loader_test::rms_problem(2, 4));
  CHECK(norm.backend().name == "neighbour");
  const std::string maps = mapped_files();
  CHECK(maps.find("libswitchyard-neighbour.so") != std::string::npos);
  CHECK(maps.find("libswitchyard-crashes_on_load.so") == std::string::npos);
}

TEST_CASE("a deprecated backend name maps to the new one, warning once per process") {
  const loader_test::LogCapture log;
  for (int i = 0; i < 3; ++i) {
    switchyard::RuntimeOptions options = isolated_options({fixture("renamed")});
    options.cross_entropy = "megatron";
    const Runtime runtime(options);
    const Selection selection = runtime.select(Family::CrossEntropy);
    CHECK(selection.resolved_name == "native");
    CHECK(selection.requested.value == "megatron");
    REQUIRE(selection.notes.size() == 1);
    CHECK_CONTAINS(selection.notes[0], "'megatron' is a deprecated name");
    CHECK_CONTAINS(selection.notes[0], "'native'");
  }
  INFO(log.text());
  CHECK(log.count("'megatron' is a deprecated name") == 1);
}

TEST_CASE("deterministic mode refuses NONDETERMINISTIC backends and warns on UNKNOWN") {
  SUBCASE("refused") {
    const Runtime runtime(isolated_options(
        {fixture("determinism")},
        {{"SWITCHYARD_DETERMINISTIC", "1"}, {"SWITCHYARD_CROSS_ENTROPY", "nondeterministic"}}));
    const std::string message = selection_error(runtime, Family::CrossEntropy, SY_ERR_UNSUPPORTED);
    CHECK_CONTAINS(message, "backend 'nondeterministic'");
    CHECK_CONTAINS(message, "NONDETERMINISTIC");
    CHECK_CONTAINS(message, "1 (environment: SWITCHYARD_DETERMINISTIC)");
  }
  SUBCASE("allowed when determinism is not required") {
    const Runtime runtime(isolated_options({fixture("determinism")},
                                           {{"SWITCHYARD_CROSS_ENTROPY", "nondeterministic"}}));
    CHECK(runtime.select(Family::CrossEntropy).resolved_name == "nondeterministic");
  }
  SUBCASE("unknown: selected, with a note") {
    switchyard::RuntimeOptions options = isolated_options({fixture("determinism")});
    options.cross_entropy = "unknown_determinism";
    options.deterministic = true;
    const Selection selection = Runtime(options).select(Family::CrossEntropy);
    CHECK(selection.resolved_name == "unknown_determinism");
    REQUIRE(selection.notes.size() == 1);
    CHECK_CONTAINS(selection.notes[0], "UNKNOWN");
    CHECK_CONTAINS(selection.notes[0], "RuntimeOptions::deterministic");
  }
}

TEST_CASE("--transformer-impl local falls back to native, with a note, when apex is missing") {
  switchyard::RuntimeOptions options = isolated_options({fixture("renamed")});
  options.args = {"--transformer-impl", "local"};
  const Runtime runtime(options);
  const Selection selection = runtime.select(Family::Norm);
  CHECK(selection.requested.value == "apex");
  CHECK(selection.requested.fallback == "native");
  CHECK(selection.resolved_name == "native");
  REQUIRE(selection.notes.size() == 1);
  CHECK_CONTAINS(selection.notes[0], "'apex' cannot be used");
  CHECK_CONTAINS(selection.notes[0], "using 'native' instead");

  SUBCASE("and when the fallback is missing too, the error says both") {
    switchyard::RuntimeOptions nothing = isolated_options({fixture("cpu_echo")});
    nothing.args = {"--transformer-impl", "local"};
    const std::string message = selection_error(Runtime(nothing), Family::Norm, SY_ERR_UNAVAILABLE);
    CHECK_CONTAINS(message, "libswitchyard-apex.so");
    CHECK_CONTAINS(message, "The fallback 'native' could not be used either");
  }
}
