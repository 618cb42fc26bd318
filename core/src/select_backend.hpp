// Resolving a family to one plugin (DESIGN §5): deprecated names, the first match on the
// search path, fallback, determinism, and the error that explains a failure.
#ifndef SWITCHYARD_CORE_SELECT_BACKEND_HPP
#define SWITCHYARD_CORE_SELECT_BACKEND_HPP

#include "host_services.hpp"
#include "plugin_library.hpp"

#include <switchyard/switchyard.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace switchyard::detail {

// The plugins a Runtime has opened in its own process, by path. Thread-safe. Only loads
// that validated and probed Ok are kept; a failure is retried on the next request.
class LibraryCache {
 public:
  LoadResult load(const std::string& path, const std::shared_ptr<const HostServices>& host);

 private:
  std::mutex mutex_;
  std::map<std::string, LoadResult> loaded_;
};

struct Selected {
  Selection selection;
  std::shared_ptr<const PluginLibrary> library;  // offers the family; probe said Ok
};

// Opens only the selected plugin's file in this process. On failure, loads every candidate
// on the search path in child processes to explain why, and throws Error.
Selected select_backend(Family family, const Settings& settings,
                        const std::shared_ptr<const HostServices>& host, LibraryCache& cache);

const char* determinism_name(sy_determinism determinism) noexcept;

}  // namespace switchyard::detail

#endif
