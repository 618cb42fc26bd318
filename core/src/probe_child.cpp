// The child side of isolated loading. Plain POSIX I/O only: in the fork fallback this runs in
// a copy of a possibly multithreaded process, where no lock another thread held may be taken.
#include "probe_child.hpp"

#include "plugin_info_wire.hpp"
#include "plugin_library.hpp"

#include <unistd.h>

#include <cerrno>
#include <memory>

namespace switchyard::detail {
namespace {

bool write_all(int fd, const std::string& bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int load_and_report(int result_fd, const std::string& path, const HostServices& host) noexcept {
  try {
    // Non-owning: `host` outlives this process's use of it, and nothing is ever unloaded.
    const std::shared_ptr<const HostServices> services(std::shared_ptr<const HostServices>(),
                                                       &host);
    LoadOptions options;
    options.probe = true;
    options.isolated = true;
    const LoadResult result = PluginLibrary::load(path, services, options);
    return write_all(result_fd, serialize_plugin_info(result.info)) ? kProbeAnswered
                                                                    : kProbeWriteFailed;
  } catch (...) {
    return kProbeFailed;
  }
}

}  // namespace switchyard::detail
