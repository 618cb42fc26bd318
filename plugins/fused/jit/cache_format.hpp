// The on-disk JIT kernel cache of the fused plugin: where it lives, what an entry file holds,
// and how entries are listed and cleared. This is the ONE definition of the format: the plugin
// (plugins/fused/jit/disk_cache.cpp) writes and reads entries with it, and `switchyard cache`
// (tools/cli/cmd_cache.cpp) lists and clears them with it. Header-only, no CUDA, C++17.
//
// Location: <root>/fused, where <root> is the plugin option `cache_dir` (the core fills the
// wildcard option `*.cache_dir` from SWITCHYARD_CACHE_DIR), else $XDG_CACHE_HOME/switchyard,
// else $HOME/.cache/switchyard. The root is what `switchyard doctor` reports; every JIT plugin
// keeps its own sub-folder, so that one plugin's `clear` never touches another's files.
//
// Entry file "<key as 32 hex digits>.syjit", little-endian throughout:
//
//   offset size
//        0    8  magic "SYFJIT\r\n" (the \r\n catches text-mode mangling)
//        8    4  format version (kFormatVersion)
//       12    4  header bytes H = 80 + description bytes (offset of the payload)
//       16   16  key (Hash128: low word, then high word)
//       32    8  payload bytes P
//       40    4  architecture as major*10+minor (90 = sm_90)
//       44    4  payload kind (1 = cubin, 2 = PTX)
//       48    4  NVRTC version as major*1000+minor*10 (13000 = 13.0)
//       52    4  CUDA driver version (cudaDriverGetVersion; 0 when unknown)
//       56    8  created, milliseconds since the Unix epoch
//       64    8  compile time in microseconds (NVRTC only)
//       72    4  description bytes D
//       76    4  reserved, 0
//       80    D  description: what the entry specialises, UTF-8 ("ce_forward bf16 Vp=...")
//        H    P  payload: the cubin (or PTX) exactly as NVRTC returned it
//      H+P   16  checksum: murmur3_128(everything before it, seed kChecksumSeed)
//
// Rules: entries are written to a temporary file in the same folder (".tmp-<key>-<pid>-<n>"),
// fsync'ed and renamed into place, so a reader sees a whole entry or none. A reader verifies
// size, magic, version, key and checksum before using a byte of the payload; a bad entry is
// deleted and compiled again. The folder is capped (option `cache_max_bytes`); after each
// write the least recently used entries go first, by modification time, which a cache hit
// refreshes.
#ifndef SWITCHYARD_FUSED_JIT_CACHE_FORMAT_HPP
#define SWITCHYARD_FUSED_JIT_CACHE_FORMAT_HPP

#include "hash128.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace switchyard::fused::jit::cache {

// ---- names and limits ---------------------------------------------------------------------

inline constexpr char kMagic[8] = {'S', 'Y', 'F', 'J', 'I', 'T', '\r', '\n'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kChecksumSeed = 0x5f4a4954u;  // "TIJ_"
inline constexpr size_t kFixedHeaderBytes = 80;
inline constexpr size_t kChecksumBytes = 16;
inline constexpr size_t kMaxDescriptionBytes = 4096;
inline constexpr const char* kEntrySuffix = ".syjit";
inline constexpr const char* kTempPrefix = ".tmp-";
inline constexpr const char* kPluginFolder = "fused";  // <root>/fused
inline constexpr int64_t kDefaultMaxBytes = int64_t{256} << 20;

// Plugin option keys (read through sy_host.option by the plugin, from
// Settings::plugin_options by the CLI).
inline constexpr const char* kOptionDir = "cache_dir";
inline constexpr const char* kOptionDisable = "cache_disable";
inline constexpr const char* kOptionMaxBytes = "cache_max_bytes";

enum class PayloadKind : uint32_t { Cubin = 1, Ptx = 2 };

inline const char* payload_kind_name(PayloadKind kind) {
  return kind == PayloadKind::Cubin ? "cubin" : kind == PayloadKind::Ptx ? "ptx" : "unknown";
}

// What an entry says about itself (everything but the payload).
struct EntryInfo {
  Hash128 key;
  uint32_t arch = 0;  // 90 for sm_90
  PayloadKind kind = PayloadKind::Cubin;
  uint32_t nvrtc_version = 0;   // 13000 for 13.0
  uint32_t driver_version = 0;  // 13000 for a CUDA 13.0 driver
  uint64_t created_unix_ms = 0;
  uint64_t compile_us = 0;
  std::string description;
};

inline std::string entry_file_name(const Hash128& key) { return key.hex() + kEntrySuffix; }

// The key of "<32 hex>.syjit", or nothing for any other name.
inline std::optional<Hash128> key_of_file_name(std::string_view name) {
  const std::string_view suffix = kEntrySuffix;
  if (name.size() != 32 + suffix.size() || name.substr(32) != suffix) return std::nullopt;
  return Hash128::from_hex(name.substr(0, 32));
}

inline bool is_temp_file_name(std::string_view name) {
  return name.substr(0, std::string_view(kTempPrefix).size()) == kTempPrefix;
}

// "13.0" from 13000.
inline std::string version_text(uint32_t version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// ---- encoding -----------------------------------------------------------------------------

namespace detail {

inline void put32(std::string& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((v >> (8 * i)) & 0xffu);
}
inline void put64(std::string& out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[at + i] = static_cast<char>((v >> (8 * i)) & 0xffu);
}
inline uint32_t get32(std::string_view in, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[at + i]);
  return v;
}
inline uint64_t get64(std::string_view in, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[at + i]);
  return v;
}

}  // namespace detail

// The whole file for `info` and `payload`.
inline std::string encode_entry(const EntryInfo& info, std::string_view payload) {
  const std::string description = info.description.substr(0, kMaxDescriptionBytes);
  const size_t header = kFixedHeaderBytes + description.size();
  std::string out(header + payload.size() + kChecksumBytes, '\0');
  std::memcpy(&out[0], kMagic, sizeof kMagic);
  detail::put32(out, 8, kFormatVersion);
  detail::put32(out, 12, static_cast<uint32_t>(header));
  detail::put64(out, 16, info.key.low);
  detail::put64(out, 24, info.key.high);
  detail::put64(out, 32, payload.size());
  detail::put32(out, 40, info.arch);
  detail::put32(out, 44, static_cast<uint32_t>(info.kind));
  detail::put32(out, 48, info.nvrtc_version);
  detail::put32(out, 52, info.driver_version);
  detail::put64(out, 56, info.created_unix_ms);
  detail::put64(out, 64, info.compile_us);
  detail::put32(out, 72, static_cast<uint32_t>(description.size()));
  detail::put32(out, 76, 0);
  if (!description.empty()) std::memcpy(&out[kFixedHeaderBytes], description.data(), description.size());
  if (!payload.empty()) std::memcpy(&out[header], payload.data(), payload.size());
  const Hash128 sum = murmur3_128(out.data(), header + payload.size(), kChecksumSeed);
  detail::put64(out, header + payload.size(), sum.low);
  detail::put64(out, header + payload.size() + 8, sum.high);
  return out;
}

struct DecodedEntry {
  EntryInfo info;
  size_t payload_offset = 0;  // into the bytes that were decoded
  size_t payload_bytes = 0;
};

// Verifies and decodes a whole entry file. On failure returns nothing and says why in
// `error` (a phrase: "checksum mismatch (the file is corrupt)"). With `expected_key`, an
// entry that holds another key (a renamed file) fails too.
inline std::optional<DecodedEntry> decode_entry(std::string_view bytes, std::string* error,
                                                const Hash128* expected_key = nullptr) {
  auto fail = [&](const std::string& why) -> std::optional<DecodedEntry> {
    if (error) *error = why;
    return std::nullopt;
  };
  if (bytes.size() < kFixedHeaderBytes + kChecksumBytes)
    return fail("too short (" + std::to_string(bytes.size()) + " bytes; a valid entry has at least " +
                std::to_string(kFixedHeaderBytes + kChecksumBytes) + ")");
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return fail("not a switchyard fused cache entry (bad magic)");
  const uint32_t version = detail::get32(bytes, 8);
  if (version != kFormatVersion)
    return fail("format version " + std::to_string(version) + ", this build reads version " +
                std::to_string(kFormatVersion));
  const uint64_t header = detail::get32(bytes, 12);
  const uint64_t payload = detail::get64(bytes, 32);
  const uint64_t description = detail::get32(bytes, 72);
  if (description > kMaxDescriptionBytes || header != kFixedHeaderBytes + description)
    return fail("inconsistent header (header " + std::to_string(header) + " bytes, description " +
                std::to_string(description) + " bytes)");
  if (payload > bytes.size() || header + payload + kChecksumBytes != bytes.size())
    return fail("size mismatch (file " + std::to_string(bytes.size()) + " bytes, header says " +
                std::to_string(header) + " + " + std::to_string(payload) + " + " +
                std::to_string(kChecksumBytes) + "): truncated or corrupt");
  const Hash128 sum = murmur3_128(bytes.data(), static_cast<size_t>(header + payload), kChecksumSeed);
  const Hash128 stored{detail::get64(bytes, header + payload), detail::get64(bytes, header + payload + 8)};
  if (sum != stored) return fail("checksum mismatch (the file is corrupt)");
  DecodedEntry entry;
  EntryInfo& info = entry.info;
  info.key = Hash128{detail::get64(bytes, 16), detail::get64(bytes, 24)};
  info.arch = detail::get32(bytes, 40);
  const uint32_t kind = detail::get32(bytes, 44);
  if (kind != static_cast<uint32_t>(PayloadKind::Cubin) && kind != static_cast<uint32_t>(PayloadKind::Ptx))
    return fail("unknown payload kind " + std::to_string(kind));
  info.kind = static_cast<PayloadKind>(kind);
  info.nvrtc_version = detail::get32(bytes, 48);
  info.driver_version = detail::get32(bytes, 52);
  info.created_unix_ms = detail::get64(bytes, 56);
  info.compile_us = detail::get64(bytes, 64);
  info.description = std::string(bytes.substr(kFixedHeaderBytes, static_cast<size_t>(description)));
  if (expected_key != nullptr && info.key != *expected_key)
    return fail("holds key " + info.key.hex() + ", expected " + expected_key->hex() +
                " (a renamed or misplaced file)");
  entry.payload_offset = static_cast<size_t>(header);
  entry.payload_bytes = static_cast<size_t>(payload);
  return entry;
}

// ---- settings -----------------------------------------------------------------------------

// 1/0, true/false, yes/no, on/off in any case; nothing for anything else.
inline std::optional<bool> parse_bool(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return false;
  return std::nullopt;
}

// "268435456", "256M", "256MiB", "1G", "512k" (binary multiples); nothing when malformed,
// negative or beyond 2^62.
inline std::optional<int64_t> parse_byte_size(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 18) return std::nullopt;
  int64_t value = std::stoll(std::string(text.substr(0, digits)));
  std::string unit;
  for (char c : text.substr(digits)) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kib") shift = 10;
  else if (unit == "m" || unit == "mib") shift = 20;
  else if (unit == "g" || unit == "gib") shift = 30;
  else return std::nullopt;
  if (value > (int64_t{1} << (62 - shift))) return std::nullopt;
  return value << shift;
}

// Where the cache is and whether it is used, from the three plugin options (NULL = unset).
struct Location {
  std::string folder;        // <root>/fused; empty when no root can be determined
  std::string root;          // what the option or the default named
  std::string origin;        // "plugin option cache_dir", "$XDG_CACHE_HOME", "$HOME"
  bool disabled = false;     // cache_disable = 1
  int64_t max_bytes = kDefaultMaxBytes;
  std::string problem;       // a malformed option, named with its value; empty when fine
};

// Settings come from the plugin options; the environment (XDG_CACHE_HOME, HOME) is read only
// for the default location, as the XDG base-directory rules say.
inline Location resolve_location(const char* cache_dir, const char* cache_disable,
                                 const char* cache_max_bytes) {
  Location where;
  if (cache_dir != nullptr && cache_dir[0] != '\0') {
    where.root = cache_dir;
    where.origin = "plugin option cache_dir";
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    where.root = (std::filesystem::path(xdg) / "switchyard").string();
    where.origin = "$XDG_CACHE_HOME";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    where.root = (std::filesystem::path(home) / ".cache" / "switchyard").string();
    where.origin = "$HOME";
  }
  if (!where.root.empty()) where.folder = (std::filesystem::path(where.root) / kPluginFolder).string();
  if (cache_disable != nullptr && cache_disable[0] != '\0') {
    if (auto disabled = parse_bool(cache_disable)) {
      where.disabled = *disabled;
    } else {
      where.problem = std::string("option cache_disable = \"") + cache_disable +
                      "\" is not a boolean (1/0, true/false, yes/no, on/off)";
    }
  }
  if (cache_max_bytes != nullptr && cache_max_bytes[0] != '\0') {
    if (auto bytes = parse_byte_size(cache_max_bytes)) {
      where.max_bytes = *bytes;
    } else if (where.problem.empty()) {
      where.problem = std::string("option cache_max_bytes = \"") + cache_max_bytes +
                      "\" is not a size in bytes (e.g. 268435456, 256M, 1G)";
    }
  }
  return where;
}

// ---- the folder ---------------------------------------------------------------------------

inline std::optional<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return bytes;
}

// Modification time in nanoseconds since the epoch (the "last use" the LRU goes by).
inline int64_t modification_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

struct ListedEntry {
  std::string path;
  std::string file_name;
  int64_t size_bytes = 0;
  int64_t last_use_ns = 0;        // modification time
  std::optional<EntryInfo> info;  // set when the entry verifies
  std::string error;              // why it does not verify (when !info and verified)
};

// Every entry file of `folder`, most recently used first. With `verify`, each file is read
// whole and checked (so corrupt entries show as such); without, only names and stat data.
inline std::vector<ListedEntry> list_entries(const std::string& folder, bool verify) {
  std::vector<ListedEntry> entries;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto key = key_of_file_name(name);
    if (!key) continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    ListedEntry entry;
    entry.path = it->path().string();
    entry.file_name = name;
    entry.size_bytes = static_cast<int64_t>(st.st_size);
    entry.last_use_ns = modification_ns(st);
    if (verify) {
      if (auto bytes = read_whole_file(entry.path)) {
        std::string why;
        if (auto decoded = decode_entry(*bytes, &why, &*key)) entry.info = decoded->info;
        else entry.error = why;
      } else {
        entry.error = "cannot be read";
      }
    }
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(), [](const ListedEntry& a, const ListedEntry& b) {
    return a.last_use_ns != b.last_use_ns ? a.last_use_ns > b.last_use_ns : a.file_name < b.file_name;
  });
  return entries;
}

struct ClearResult {
  int64_t entries = 0;    // entry files removed
  int64_t bytes = 0;      // their size
  int64_t temporary = 0;  // leftover temporary files removed
  std::vector<std::string> errors;  // "<path>: <reason>" for files that could not be removed
};

// Removes every entry file and temporary file of the cache format in `folder` (nothing
// else: a user's file that happens to live there stays). A missing folder is an empty cache.
inline ClearResult clear_folder(const std::string& folder) {
  ClearResult result;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool entry = key_of_file_name(name).has_value();
    if (!entry && !is_temp_file_name(name)) continue;
    struct stat st {};
    const bool regular = ::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (!regular) continue;
    if (::unlink(it->path().c_str()) != 0) {
      if (errno != ENOENT) result.errors.push_back(it->path().string() + ": " + std::strerror(errno));
      continue;
    }
    if (entry) {
      ++result.entries;
      result.bytes += static_cast<int64_t>(st.st_size);
    } else {
      ++result.temporary;
    }
  }
  return result;
}

}  // namespace switchyard::fused::jit::cache

#endif  // SWITCHYARD_FUSED_JIT_CACHE_FORMAT_HPP
