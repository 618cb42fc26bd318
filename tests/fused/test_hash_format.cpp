// The cache key hash and the on-disk entry format (plugins/fused/jit/cache_format.hpp).
#include "jit/cache_format.hpp"
#include "jit/hash128.hpp"
#include "jit/kernel_args.hpp"
#include "support/fused_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace cache = switchyard::fused::jit::cache;
using switchyard::fused::jit::Hash128;
using switchyard::fused::jit::murmur3_128;
using switchyard::fused::test::TempDir;

TEST_CASE("murmur3_128 matches the published MurmurHash3_x64_128 vectors") {
  // Vectors used by Guava, Boost.Hash2 and others (seed 0).
  CHECK(murmur3_128("").hex() == "00000000000000000000000000000000");
  CHECK(murmur3_128("hello").hex() == "029bbd41b3a7d8cb191dae486a901e5b");
  CHECK(murmur3_128("abc").hex() == "6778ad3f3f3f96b4522dca264174a23b");
  CHECK(murmur3_128("The quick brown fox jumps over the lazy dog").hex() ==
        "6c1b07bc7bbc4be347939ac4a93c437a");
  CHECK(murmur3_128("The quick brown fox jumps over the lazy dog.").hex() ==
        "c902e99e1f4899cde7b68789a3a15d69");
  // Every tail length (0..15 bytes past a 16-byte block) hashes differently.
  std::string text = "0123456789abcdefghijklmnopqrstuv";
  std::vector<std::string> seen;
  for (size_t n = 16; n <= 32; ++n) seen.push_back(murmur3_128(text.substr(0, n)).hex());
  std::sort(seen.begin(), seen.end());
  CHECK(std::unique(seen.begin(), seen.end()) == seen.end());
  CHECK(murmur3_128("abc", 1) != murmur3_128("abc", 0));
}

TEST_CASE("Hash128 hex round-trips and rejects malformed text") {
  const Hash128 h = murmur3_128("switchyard");
  const auto back = Hash128::from_hex(h.hex());
  REQUIRE(back.has_value());
  CHECK(*back == h);
  CHECK_FALSE(Hash128::from_hex("abc").has_value());
  CHECK_FALSE(Hash128::from_hex(std::string(31, '0') + "G").has_value());
  CHECK_FALSE(Hash128::from_hex(std::string(32, 'A')).has_value());  // lower case only
}

namespace {

cache::EntryInfo sample_info(const std::string& what = "cross_entropy logits=bf16 Vp=50") {
  cache::EntryInfo info;
  info.key = murmur3_128(what);
  info.arch = 90;
  info.kind = cache::PayloadKind::Cubin;
  info.nvrtc_version = 13000;
  info.driver_version = 13000;
  info.created_unix_ms = 1700000000123;
  info.compile_us = 345678;
  info.description = what;
  return info;
}

}  // namespace

TEST_CASE("an entry encodes and decodes to the same fields and payload") {
  const cache::EntryInfo info = sample_info();
  const std::string payload = std::string("\x7f" "ELF") + std::string(1000, '\x42');
  const std::string file = cache::encode_entry(info, payload);
  CHECK(file.size() == cache::kFixedHeaderBytes + info.description.size() + payload.size() + 16);
  std::string why;
  const auto entry = cache::decode_entry(file, &why, &info.key);
  REQUIRE_MESSAGE(entry.has_value(), why);
  CHECK(entry->info.key == info.key);
  CHECK(entry->info.arch == 90);
  CHECK(entry->info.kind == cache::PayloadKind::Cubin);
  CHECK(entry->info.nvrtc_version == 13000);
  CHECK(entry->info.driver_version == 13000);
  CHECK(entry->info.created_unix_ms == 1700000000123u);
  CHECK(entry->info.compile_us == 345678u);
  CHECK(entry->info.description == info.description);
  CHECK(file.substr(entry->payload_offset, entry->payload_bytes) == payload);
}

TEST_CASE("a flipped byte anywhere in an entry is detected") {
  const cache::EntryInfo info = sample_info();
  const std::string file = cache::encode_entry(info, std::string(300, 'p'));
  // Every byte: magic, header fields, description, payload, checksum.
  for (size_t at = 0; at < file.size(); ++at) {
    std::string broken = file;
    broken[at] = static_cast<char>(broken[at] ^ 0x10);
    std::string why;
    const bool decoded = cache::decode_entry(broken, &why, &info.key).has_value();
    if (decoded) FAIL("flipping byte " << at << " of " << file.size() << " went unnoticed");
    CHECK_FALSE(why.empty());
  }
  std::string why;
  CHECK_FALSE(cache::decode_entry(file.substr(0, file.size() - 1), &why).has_value());
  CHECK(why.find("size mismatch") != std::string::npos);
  std::string renamed_why;
  const Hash128 other = murmur3_128("other");
  CHECK_FALSE(cache::decode_entry(file, &renamed_why, &other).has_value());
  CHECK(renamed_why.find("renamed") != std::string::npos);
  std::string checksum_why;
  std::string payload_flip = file;
  payload_flip[cache::kFixedHeaderBytes + info.description.size() + 5] ^= 1;
  CHECK_FALSE(cache::decode_entry(payload_flip, &checksum_why).has_value());
  CHECK(checksum_why == "checksum mismatch (the file is corrupt)");
}

TEST_CASE("entry file names carry the key; other names are not entries") {
  const Hash128 key = murmur3_128("x");
  CHECK(cache::entry_file_name(key) == key.hex() + ".syjit");
  CHECK(cache::key_of_file_name(cache::entry_file_name(key)) == key);
  CHECK_FALSE(cache::key_of_file_name("notes.txt").has_value());
  CHECK_FALSE(cache::key_of_file_name(key.hex() + ".cubin").has_value());
  CHECK(cache::is_temp_file_name(".tmp-" + key.hex() + "-1-0"));
  CHECK_FALSE(cache::is_temp_file_name(key.hex() + ".syjit"));
}

TEST_CASE("option values: booleans and byte sizes") {
  CHECK(cache::parse_bool("1") == true);
  CHECK(cache::parse_bool("YES") == true);
  CHECK(cache::parse_bool("off") == false);
  CHECK_FALSE(cache::parse_bool("maybe").has_value());
  CHECK(cache::parse_byte_size("1000") == 1000);
  CHECK(cache::parse_byte_size("256M") == (int64_t{256} << 20));
  CHECK(cache::parse_byte_size("2GiB") == (int64_t{2} << 30));
  CHECK(cache::parse_byte_size("4k") == 4096);
  CHECK_FALSE(cache::parse_byte_size("-5").has_value());
  CHECK_FALSE(cache::parse_byte_size("12 parsecs").has_value());
  CHECK_FALSE(cache::parse_byte_size("").has_value());
}

TEST_CASE("the cache location: option, then XDG_CACHE_HOME, then HOME; problems named") {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const char* old_home = std::getenv("HOME");
  const std::string saved_xdg = old_xdg ? old_xdg : "", saved_home = old_home ? old_home : "";
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/someone", 1);

  auto where = cache::resolve_location("/scratch/jit", nullptr, nullptr);
  CHECK(where.folder == "/scratch/jit/fused");
  CHECK(where.origin == "plugin option cache_dir");
  CHECK_FALSE(where.disabled);
  CHECK(where.max_bytes == cache::kDefaultMaxBytes);

  where = cache::resolve_location(nullptr, "1", "64M");
  CHECK(where.folder == "/xdg/switchyard/fused");
  CHECK(where.disabled);
  CHECK(where.max_bytes == (int64_t{64} << 20));

  setenv("XDG_CACHE_HOME", "relative/not/allowed", 1);  // the XDG rules ignore relative paths
  where = cache::resolve_location("", nullptr, nullptr);
  CHECK(where.folder == "/home/someone/.cache/switchyard/fused");
  CHECK(where.origin == "$HOME");

  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  where = cache::resolve_location(nullptr, nullptr, nullptr);
  CHECK(where.folder.empty());

  where = cache::resolve_location("/x", "perhaps", nullptr);
  CHECK(where.problem == "option cache_disable = \"perhaps\" is not a boolean (1/0, true/false, yes/no, on/off)");
  where = cache::resolve_location("/x", nullptr, "lots");
  CHECK(where.problem.find("cache_max_bytes = \"lots\"") != std::string::npos);

  if (old_xdg) setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  if (old_home) setenv("HOME", saved_home.c_str(), 1);
}

TEST_CASE("list_entries and clear_folder touch cache files only") {
  TempDir dir;
  const cache::EntryInfo a = sample_info("a"), b = sample_info("b");
  std::ofstream(dir / cache::entry_file_name(a.key), std::ios::binary) << cache::encode_entry(a, "AAAA");
  std::string corrupt = cache::encode_entry(b, "BBBB");
  corrupt[corrupt.size() - 20] ^= 0x55;
  std::ofstream(dir / cache::entry_file_name(b.key), std::ios::binary) << corrupt;
  std::ofstream(dir / ".tmp-leftover") << "partial";
  std::ofstream(dir / "README.txt") << "not ours";

  const auto listed = cache::list_entries(dir.path(), true);
  REQUIRE(listed.size() == 2);
  int valid = 0, broken = 0;
  for (const auto& entry : listed) {
    if (entry.info) {
      ++valid;
      CHECK(entry.info->description == "a");
    } else {
      ++broken;
      CHECK(entry.error == "checksum mismatch (the file is corrupt)");
    }
  }
  CHECK(valid == 1);
  CHECK(broken == 1);

  const cache::ClearResult cleared = cache::clear_folder(dir.path());
  CHECK(cleared.entries == 2);
  CHECK(cleared.temporary == 1);
  CHECK(cleared.errors.empty());
  CHECK(switchyard::fused::test::files_in(dir.path()) == std::vector<std::string>{"README.txt"});
  CHECK(cache::clear_folder(dir / "missing").entries == 0);
}

TEST_CASE("kernel argument structs have the layout the generated source asserts") {
  using switchyard::fused::jit::CeKernelArgs;
  using switchyard::fused::jit::NormKernelArgs;
  const std::string text = switchyard::fused::jit::kernel_args_source();
  CHECK(text.find("static_assert(sizeof(SyCeArgs) == " + std::to_string(sizeof(CeKernelArgs))) !=
        std::string::npos);
  CHECK(text.find("static_assert(sizeof(SyNormArgs) == " + std::to_string(sizeof(NormKernelArgs))) !=
        std::string::npos);
  CHECK(sizeof(CeKernelArgs) % 8 == 0);
  CHECK(text.find("static_assert(sizeof(SyCeArgs::q_target) == 8") != std::string::npos);
}
