// `switchyard bench`: runs the switchyard-bench next to the switchyard binary with the
// arguments as given, and says where it looked when there is none.
#include "cli_runner.hpp"
#include "mini_json.hpp"
#include "test_paths.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

using namespace switchyard::test;

namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The build's real plugin folder, so that the native backend is found; nothing else leaks in.
std::map<std::string, std::string> plugin_env() {
  return {{"SWITCHYARD_PLUGIN_SYSTEM_PATH", plugin_dir()}};
}

}  // namespace

#ifdef SWITCHYARD_TEST_HAVE_BENCH

TEST_CASE("bench runs switchyard-bench with the arguments as given and it writes its JSON") {
  TempDir dir;
  const std::string json_path = dir / "bench.json";
  const auto result = run_cli(
      {"bench", "--device", "cpu", "--small", "--family", "norm", "--json", json_path},
      plugin_env());
  INFO("stdout:\n" << result.out << "\nstderr:\n" << result.err);
  REQUIRE(result.exit_code == 0);
  REQUIRE(fs::exists(json_path));
  // The bench's own table and closing line reached our stdout.
  CHECK(contains(result.out, "median ms"));
  CHECK(contains(result.out, "JSON written to " + json_path));

  const JsonValue doc = parse_json(read_text(json_path));
  CHECK(doc["tool"].text == "switchyard-bench");
  CHECK(doc["settings"]["small"].boolean);
  REQUIRE_FALSE(doc["cases"].items.empty());
  for (const auto& c : doc["cases"].items) CHECK(c["family"].text == "norm");  // --family norm
  bool native_ok = false;
  for (const auto& r : doc["results"].items)
    native_ok = native_ok || (r["name"].text == "native" && r["status"].text == "ok");
  CHECK(native_ok);
}

TEST_CASE("bench passes errors, help and the exit status of switchyard-bench through") {
  const auto bad = run_cli({"bench", "--no-such-flag"});
  CHECK(bad.exit_code == 1);
  CHECK(contains(bad.err, "switchyard-bench: error:"));
  CHECK(contains(bad.err, "see switchyard-bench --help"));

  const auto help = run_cli({"help", "bench"});  // `switchyard bench --help`
  CHECK(help.exit_code == 0);
  CHECK(help.out.rfind("usage: switchyard-bench", 0) == 0);
}

#endif

TEST_CASE("bench without a switchyard-bench next to the binary names the path it looked at") {
  // A copy of the binary in a folder of its own; lib/ points at the build's libraries so that
  // its $ORIGIN/../lib run path still finds them.
  TempDir dir;
  fs::create_directory(dir / "bin");
  fs::copy_file(bin_dir() + "/switchyard", dir / "bin/switchyard");
  fs::create_directory_symlink(fs::path(plugin_dir()).parent_path().parent_path(), dir / "lib");

  const std::string command = "env -i PATH=/usr/bin:/bin HOME=" + dir.path() +
                              " SWITCHYARD_PLUGIN_SYSTEM_PATH=" + dir.path() + " '" +
                              (dir / "bin/switchyard") + "' bench --device cpu >'" +
                              (dir / "out") + "' 2>'" + (dir / "err") + "' </dev/null";
  const int status = std::system(command.c_str());
  const std::string out = read_text(dir / "out"), err = read_text(dir / "err");
  INFO("stdout:\n" << out << "\nstderr:\n" << err);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(out.empty());
  CHECK(contains(err, "switchyard bench: error: cannot run switchyard-bench: '" +
                          (dir / "bin/switchyard-bench") + "' does not exist"));
  CHECK(contains(err, "Switchyard::conformance"));
  CHECK(contains(err, "--target switchyard_bench"));
}
