#include "disk_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace switchyard::fused::jit {
namespace {

// A temporary file this old is left over from a process that died while writing it.
constexpr int64_t kStaleTemporaryNs = int64_t{3600} * 1000000000;

std::string errno_text() { return std::strerror(errno); }

// Closes the descriptor however the scope is left.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { reset(); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  int release_and_close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(written));
  }
  return true;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

DiskCache::DiskCache(std::string folder, int64_t max_bytes)
    : folder_(std::move(folder)), max_bytes_(max_bytes) {}

std::string DiskCache::path_of(const Hash128& key) const {
  return (std::filesystem::path(folder_) / cache::entry_file_name(key)).string();
}

std::optional<DiskCache::Hit> DiskCache::load(const Hash128& key, std::string* problem) const {
  Hit hit;
  hit.path = path_of(key);
  std::optional<std::string> bytes = cache::read_whole_file(hit.path);
  if (!bytes) return std::nullopt;  // not cached (or vanished under us): a miss
  std::string why;
  std::optional<cache::DecodedEntry> entry = cache::decode_entry(*bytes, &why, &key);
  if (!entry) {
    const bool removed = ::unlink(hit.path.c_str()) == 0 || errno == ENOENT;
    if (problem != nullptr)
      *problem = hit.path + ": " + why + (removed ? "; deleted" : "; could not delete it: " + errno_text());
    return std::nullopt;
  }
  // Last use, for the LRU. Failure (a read-only cache) only makes eviction less exact.
  const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  (void)::utimensat(AT_FDCWD, hit.path.c_str(), times, 0);
  hit.file = std::move(*bytes);
  hit.entry = std::move(*entry);
  return hit;
}

bool DiskCache::store(const cache::EntryInfo& info, std::string_view payload,
                      std::string* problem) const {
  const auto fail = [&](const std::string& why) {
    if (problem != nullptr) *problem = why;
    return false;
  };
  const std::string bytes = cache::encode_entry(info, payload);
  if (static_cast<int64_t>(bytes.size()) > max_bytes_)
    return fail("the entry (" + std::to_string(bytes.size()) + " bytes) is larger than " +
                "cache_max_bytes = " + std::to_string(max_bytes_));
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec) return fail("cannot create the cache folder " + folder_ + ": " + ec.message());

  static std::atomic<uint64_t> counter{0};
  const std::string temporary =
      (std::filesystem::path(folder_) / (std::string(cache::kTempPrefix) + info.key.hex() + "-" +
                                         std::to_string(::getpid()) + "-" +
                                         std::to_string(counter++)))
          .string();
  {
    FileDescriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.get() < 0) return fail("cannot create " + temporary + ": " + errno_text());
    // The data must be on disk before the rename makes it visible under the entry's name,
    // or a crash could leave a complete-looking name over incomplete data.
    if (!write_all(fd.get(), bytes) || ::fsync(fd.get()) != 0) {
      const std::string why = errno_text();
      fd.reset();
      ::unlink(temporary.c_str());
      return fail("cannot write " + temporary + ": " + why);
    }
    if (fd.release_and_close() != 0) {
      const std::string why = errno_text();
      ::unlink(temporary.c_str());
      return fail("cannot write " + temporary + ": " + why);
    }
  }
  const std::string final_path = path_of(info.key);
  if (::rename(temporary.c_str(), final_path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(temporary.c_str());
    return fail("cannot rename " + temporary + " to " + final_path + ": " + why);
  }
  // Make the rename itself durable (best effort: some file systems refuse fsync on folders).
  FileDescriptor folder_fd(::open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (folder_fd.get() >= 0) (void)::fsync(folder_fd.get());
  evict(info.key);
  return true;
}

void DiskCache::evict(const Hash128& keep) const {
  std::vector<cache::ListedEntry> entries = cache::list_entries(folder_, /*verify=*/false);
  int64_t total = 0;
  for (const auto& entry : entries) total += entry.size_bytes;
  // Most recently used first: drop from the back.
  const std::string keep_name = cache::entry_file_name(keep);
  for (auto it = entries.rbegin(); it != entries.rend() && total > max_bytes_; ++it) {
    if (it->file_name == keep_name) continue;
    if (::unlink(it->path.c_str()) == 0 || errno == ENOENT) total -= it->size_bytes;
  }
  // Temporary files of writers that died.
  std::error_code ec;
  const int64_t now = now_ns();
  for (std::filesystem::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!cache::is_temp_file_name(it->path().filename().string())) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        now - cache::modification_ns(st) > kStaleTemporaryNs)
      ::unlink(it->path().c_str());
  }
}

}  // namespace switchyard::fused::jit
