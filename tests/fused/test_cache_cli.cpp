// `switchyard cache list|clear` on a populated temporary cache, run as the built binary with a
// controlled environment.
#include "jit/cache_format.hpp"
#include "jit/disk_cache.hpp"
#include "support/fused_support.hpp"

#include <doctest/doctest.h>

#include <fstream>

namespace cache = switchyard::fused::jit::cache;
using switchyard::fused::jit::DiskCache;
using switchyard::fused::jit::murmur3_128;
using switchyard::fused::test::files_in;
using switchyard::fused::test::ProcessResult;
using switchyard::fused::test::run_program;
using switchyard::fused::test::TempDir;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// A cache at <root>/fused with two good entries, one corrupt, a leftover temporary file and a
// file of the user's.
struct PopulatedCache {
  TempDir root;
  TempDir home;
  TempDir plugins;  // an empty system plugin folder: the build's plugins stay out
  std::string folder = root / "fused";

  PopulatedCache() {
    const DiskCache disk(folder, cache::kDefaultMaxBytes);
    for (const std::string what : {"cross_entropy logits=bf16 grad=bf16 labels=int64 Vp=131072",
                                   "norm RMSNorm H=4096 x=bf16 y=bf16"}) {
      cache::EntryInfo info;
      info.key = murmur3_128(what);
      info.arch = 90;
      info.nvrtc_version = 13000;
      info.driver_version = 13000;
      info.created_unix_ms = 1700000000000;
      info.compile_us = 412000;
      info.description = what;
      std::string problem;
      REQUIRE_MESSAGE(disk.store(info, std::string(2048, 'c'), &problem), problem);
    }
    cache::EntryInfo info;
    info.key = murmur3_128("broken");
    info.description = "broken";
    std::string bytes = cache::encode_entry(info, "payload");
    bytes[bytes.size() - 3] ^= 0x40;
    std::ofstream(folder + "/" + cache::entry_file_name(info.key), std::ios::binary) << bytes;
    std::ofstream(folder + "/.tmp-leftover-1-0") << "half written";
    std::ofstream(folder + "/notes.txt") << "the user's";
  }

  std::map<std::string, std::string> environment(std::map<std::string, std::string> more = {}) const {
    std::map<std::string, std::string> env = {{"HOME", home.path()},
                                              {"SWITCHYARD_PLUGIN_SYSTEM_PATH", plugins.path()}};
    for (auto& [key, value] : more) env[key] = value;
    return env;
  }
};

ProcessResult cli(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  return run_program(SY_TEST_CLI, args, env);
}

}  // namespace

TEST_CASE("switchyard cache list: every entry with what it specialises; corrupt ones marked") {
  PopulatedCache c;
  const ProcessResult r = cli({"cache", "list"}, c.environment({{"SWITCHYARD_CACHE_DIR", c.root.path()}}));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "cache     " + c.folder + "\n"));
  CHECK(contains(r.out, "location  plugin option *.cache_dir (environment: SWITCHYARD_CACHE_DIR)\n"));
  CHECK(contains(r.out, "state     enabled"));
  CHECK(contains(r.out, "size      3 entries, "));
  CHECK(contains(r.out, "of 256.0 MiB (cache_max_bytes, default)"));
  CHECK(contains(r.out, "cross_entropy logits=bf16 grad=bf16 labels=int64 Vp=131072"));
  CHECK(contains(r.out, "norm RMSNorm H=4096 x=bf16 y=bf16"));
  CHECK(contains(r.out, "sm_90"));
  CHECK(contains(r.out, "412 ms"));
  CHECK(contains(r.out, murmur3_128("broken").hex()));
  CHECK(contains(r.out, "CORRUPT: checksum mismatch (the file is corrupt)"));
  CHECK_FALSE(contains(r.out, "notes.txt"));
  CHECK(r.err.empty());
}

TEST_CASE("switchyard cache list --json") {
  PopulatedCache c;
  const ProcessResult r =
      cli({"cache", "list", "--json"}, c.environment({{"SWITCHYARD_CACHE_DIR", c.root.path()}}));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "\"folder\": \"" + c.folder + "\""));
  CHECK(contains(r.out, "\"disabled\": false"));
  CHECK(contains(r.out, "\"max_bytes\": 268435456"));
  CHECK(count(r.out, "\"key\": ") == 3);
  CHECK(count(r.out, "\"valid\": true") == 2);
  CHECK(count(r.out, "\"valid\": false") == 1);
  CHECK(contains(r.out, "\"error\": \"checksum mismatch (the file is corrupt)\""));
  CHECK(contains(r.out, "\"specialises\": \"norm RMSNorm H=4096 x=bf16 y=bf16\""));
  CHECK(contains(r.out, "\"arch\": \"sm_90\""));
  CHECK(contains(r.out, "\"nvrtc\": \"13.0\""));
  CHECK(contains(r.out, "\"created\": \"2023-11-14T22:13:20Z\""));
}

TEST_CASE("switchyard cache clear removes the entries and leftovers, nothing else") {
  PopulatedCache c;
  const auto env = c.environment({{"SWITCHYARD_CACHE_DIR", c.root.path()}});
  const ProcessResult r = cli({"cache", "clear"}, env);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "removed 3 entries ("));
  CHECK(contains(r.out, "and 1 temporary file(s) from " + c.folder));
  CHECK(files_in(c.folder) == std::vector<std::string>{"notes.txt"});
  const ProcessResult listed = cli({"cache", "list"}, env);
  CHECK(contains(listed.out, "size      0 entries"));
  CHECK(contains(listed.out, "no entries"));
  const ProcessResult json = cli({"cache", "clear", "--json"}, env);
  CHECK(contains(json.out, "\"removed_entries\": 0"));
}

TEST_CASE("switchyard cache follows the plugin's location rules and precedence") {
  PopulatedCache c;
  TempDir other;
  // Disabled: listed all the same, and said so with where it was disabled.
  ProcessResult r = cli({"cache", "list"}, c.environment({{"SWITCHYARD_CACHE_DIR", c.root.path()},
                                                          {"SWITCHYARD_CACHE_DISABLE", "1"}}));
  CHECK(contains(r.out, "state     disabled by plugin option *.cache_disable (environment: "
                        "SWITCHYARD_CACHE_DISABLE) = 1"));
  CHECK(contains(r.out, "size      3 entries"));
  // The command line beats the environment.
  r = cli({"cache", "list", "--plugin-option", "fused.cache_dir=" + other.path()},
          c.environment({{"SWITCHYARD_CACHE_DIR", c.root.path()}}));
  CHECK(contains(r.out, "cache     " + other.path() + "/fused\n"));
  CHECK(contains(r.out, "location  plugin option fused.cache_dir (command line"));
  // The environment beats the config file, wildcard or not.
  TempDir config_dir;
  std::ofstream(config_dir / "sy.ini") << "[plugin.fused]\ncache_dir = " << other.path() << "\n";
  r = cli({"cache", "list"}, c.environment({{"SWITCHYARD_CACHE_DIR", c.root.path()},
                                            {"SWITCHYARD_CONFIG", config_dir / "sy.ini"}}));
  CHECK(contains(r.out, "cache     " + c.folder + "\n"));
  r = cli({"cache", "list"}, c.environment({{"SWITCHYARD_CONFIG", config_dir / "sy.ini"}}));
  CHECK(contains(r.out, "cache     " + other.path() + "/fused\n"));
  // Defaults: $XDG_CACHE_HOME/switchyard/fused, else ~/.cache/switchyard/fused.
  r = cli({"cache", "list"}, c.environment({{"XDG_CACHE_HOME", other.path()}}));
  CHECK(contains(r.out, "cache     " + other.path() + "/switchyard/fused\n"));
  CHECK(contains(r.out, "location  default: $XDG_CACHE_HOME"));
  r = cli({"cache", "list"}, c.environment());
  CHECK(contains(r.out, "cache     " + c.home.path() + "/.cache/switchyard/fused\n"));
  // The cap, from its option.
  r = cli({"cache", "list", "--plugin-option", "fused.cache_max_bytes=64M"},
          c.environment({{"SWITCHYARD_CACHE_DIR", c.root.path()}}));
  CHECK(contains(r.out, "of 64.0 MiB (cache_max_bytes, plugin option fused.cache_max_bytes (command line"));
}

TEST_CASE("switchyard cache: usage errors name the problem") {
  PopulatedCache c;
  ProcessResult r = cli({"cache"}, c.environment());
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "missing the action: 'switchyard cache list' or 'switchyard cache clear'"));
  r = cli({"cache", "lst"}, c.environment());
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "unknown action 'lst' (did you mean 'list'?)"));
  r = cli({"--help"}, c.environment());
  CHECK(contains(r.out, "cache"));
  CHECK(contains(r.out, "list or clear the fused plugin's JIT kernel cache"));
  r = cli({"cache", "--help"}, c.environment());
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "usage: switchyard cache list|clear [options]"));
}
