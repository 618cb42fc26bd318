// The plugin's side of the on-disk kernel cache (format and location: cache_format.hpp).
// Every method is safe against other processes using the same folder at the same time:
// writes are atomic renames, a reader holds the whole file in memory before checking it, and
// a file that vanishes under a reader is a miss.
#ifndef SWITCHYARD_FUSED_JIT_DISK_CACHE_HPP
#define SWITCHYARD_FUSED_JIT_DISK_CACHE_HPP

#include "cache_format.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace switchyard::fused::jit {

class DiskCache {
 public:
  DiskCache(std::string folder, int64_t max_bytes);

  struct Hit {
    std::string file;  // the whole entry file
    cache::DecodedEntry entry;
    std::string path;
    std::string_view payload() const {
      return std::string_view(file).substr(entry.payload_offset, entry.payload_bytes);
    }
  };

  // The verified entry for `key`, or nothing. A hit refreshes the entry's modification time
  // (its "last use" for the LRU). An entry that fails verification is deleted and reported in
  // `problem` ("<path>: checksum mismatch (the file is corrupt); deleted"); a missing entry
  // leaves `problem` empty.
  std::optional<Hit> load(const Hash128& key, std::string* problem) const;

  // Writes the entry atomically (temporary file in the folder, fsync, rename), then removes
  // least recently used entries until the folder fits the cap (never the new entry). Returns
  // false with the reason when nothing was stored; storing is best effort: a read-only or
  // full disk only costs a compile in the next process.
  bool store(const cache::EntryInfo& info, std::string_view payload, std::string* problem) const;

  const std::string& folder() const { return folder_; }
  std::string path_of(const Hash128& key) const;

 private:
  void evict(const Hash128& keep) const;

  std::string folder_;
  int64_t max_bytes_;
};

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_DISK_CACHE_HPP
