// Opening a plugin in this process and checking its descriptor against ABI v1.
#include "plugin_library.hpp"

#include "backend_names.hpp"

#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <utility>

namespace switchyard::detail {

struct PluginLibrary::Handle {
  boost::dll::shared_library library;
};

namespace {

namespace fs = std::filesystem;

std::string text_or_empty(const char* text) { return text != nullptr ? text : ""; }

// Reasons name the file (its base name: PluginInfo::path holds the rest).
std::string base_name(const std::string& path) { return fs::path(path).filename().string(); }

// nullopt when `path` is a readable file that starts with an ELF header, else why not.
std::optional<std::string> check_elf_file(const std::string& path) {
  const std::string file = base_name(path);
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return file + " does not exist";
  if (!fs::is_regular_file(status)) return file + " is not a regular file";
  // Plain POSIX I/O: this also runs in the fork fallback of isolated_load, where no lock that
  // another thread of the parent might have held (iostreams, locales) may be touched.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return file + " cannot be opened for reading: " + std::strerror(errno);
  std::array<char, 4> magic{};
  ssize_t got = 0;
  do {
    got = ::read(fd, magic.data(), magic.size());
  } while (got < 0 && errno == EINTR);
  ::close(fd);
  if (got != 4 || std::memcmp(magic.data(), "\x7f" "ELF", 4) != 0) {
    return file +
           " is not a shared library: it does not start with an ELF header (a text file, a "
           "linker script or a truncated download?)";
  }
  return std::nullopt;
}

std::string captured_log_summary(const std::vector<std::string>& lines) {
  if (lines.empty()) return "it logged nothing";
  std::string summary = "it logged: ";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    summary += (i == 0 ? "\"" : "; \"") + lines[i] + "\"";
  }
  return summary;
}

bool size_in_range(std::size_t size, std::size_t minimum) {
  return size >= minimum && size <= kMaxStructSize;
}

std::string size_range_problem(const std::string& file, const char* what, std::size_t size,
                               std::size_t minimum) {
  return file + ": " + what + " struct_size is " + std::to_string(size) +
         " bytes; expected between " + std::to_string(minimum) + " (ABI v1.0) and " +
         std::to_string(kMaxStructSize);
}

sy_determinism known_determinism(sy_determinism value) {
  // A value from a newer minor means nothing to this host: it promises nothing.
  return value == SY_DETERMINISTIC || value == SY_NONDETERMINISTIC ? value
                                                                    : SY_DETERMINISM_UNKNOWN;
}

// Copies the first min(plugin size, host size) bytes of a plugin table into a zeroed host
// struct: slots the plugin does not have stay zero (NULL), slots of a newer minor are not
// read at all.
template <class T>
T copy_table(const T& source) {
  T copy{};
  std::memcpy(static_cast<void*>(&copy), static_cast<const void*>(&source),
              std::min(source.struct_size, sizeof(T)));
  copy.struct_size = sizeof(T);
  return copy;
}

// nullopt when the cross-entropy table is usable, else why not.
std::optional<std::string> check_cross_entropy(const std::string& file,
                                               const sy_cross_entropy& table) {
  if (!size_in_range(table.struct_size, kCrossEntropyV1_0Size))
    return size_range_problem(file, "cross_entropy table", table.struct_size,
                              kCrossEntropyV1_0Size);
  if (table.supports == nullptr || table.workspace_size == nullptr || table.forward == nullptr ||
      table.backward == nullptr) {
    return file +
           ": cross_entropy table has a NULL function (supports, workspace_size, forward and "
           "backward are all required)";
  }
  return std::nullopt;
}

std::optional<std::string> check_norm(const std::string& file, const sy_norm& table) {
  if (!size_in_range(table.struct_size, kNormV1_0Size))
    return size_range_problem(file, "norm table", table.struct_size, kNormV1_0Size);
  if (table.supports == nullptr || table.workspace_size == nullptr || table.forward == nullptr ||
      table.backward == nullptr) {
    return file +
           ": norm table has a NULL function (supports, workspace_size, forward and backward "
           "are all required)";
  }
  return std::nullopt;
}

// nullopt when the descriptor is a valid ABI v1 descriptor for the file at `path`.
std::optional<std::string> check_descriptor(const std::string& path, const sy_plugin& plugin) {
  const std::string file = base_name(path);
  constexpr std::size_t kVersionFieldsEnd = offsetof(sy_plugin, abi_minor) + sizeof(int32_t);
  if (plugin.struct_size < kVersionFieldsEnd || plugin.struct_size > kMaxStructSize)
    return size_range_problem(file, "descriptor", plugin.struct_size, kPluginV1_0Size);
  if (plugin.abi_major != SY_ABI_MAJOR) {
    return file + " was built for ABI " + std::to_string(plugin.abi_major) + "." +
           std::to_string(plugin.abi_minor) + ", this host speaks " +
           std::to_string(SY_ABI_MAJOR) + "." + std::to_string(SY_ABI_MINOR) +
           "; rebuild it against a Switchyard " + std::to_string(SY_ABI_MAJOR) +
           ".x SDK, or use a host that speaks ABI " + std::to_string(plugin.abi_major);
  }
  if (!size_in_range(plugin.struct_size, kPluginV1_0Size))
    return size_range_problem(file, "descriptor", plugin.struct_size, kPluginV1_0Size);
  if (plugin.name == nullptr)
    return file + ": descriptor name is NULL; expected [a-z0-9_]+ matching the file name";
  const std::string name = plugin.name;
  if (!valid_plugin_name(name))
    return file + ": descriptor name '" + name +
           "' is not a valid plugin name (expected [a-z0-9_]+)";
  const std::optional<std::string> file_says = plugin_name_from_file(file);
  if (!file_says) {
    return file + ": the file name does not follow libswitchyard-<name>.so; rename it to " +
           plugin_file_name(name);
  }
  if (*file_says != name) {
    return file + ": descriptor name '" + name + "' does not match the file name (which says '" +
           *file_says + "'); rename the file to " + plugin_file_name(name) +
           " or fix the name in the descriptor";
  }
  if (plugin.probe == nullptr)
    return file + ": descriptor probe is NULL; every plugin must say whether it can run here";
  if (plugin.cross_entropy != nullptr) {
    if (auto problem = check_cross_entropy(file, *plugin.cross_entropy)) return problem;
  }
  if (plugin.norm != nullptr) {
    if (auto problem = check_norm(file, *plugin.norm)) return problem;
  }
  return std::nullopt;
}

template <class Table>
FamilyInfo family_info(const Table* table, std::int32_t table_struct_size) {
  FamilyInfo info;
  if (table == nullptr) return info;
  info.offered = true;
  info.dtypes = table->dtypes;
  info.devices = table->devices;
  info.features = table->features;
  info.determinism = table->determinism;
  info.table_struct_size = table_struct_size;
  return info;
}

LoadResult rejected(PluginInfo info, std::string reason) {
  info.state = PluginState::Rejected;
  info.reason = std::move(reason);
  return LoadResult{nullptr, std::move(info)};
}

}  // namespace

PluginInfo blank_plugin_info(const std::string& path) {
  PluginInfo info;
  info.path = path;
  info.file_name = fs::path(path).filename().string();
  const std::optional<std::string> name = plugin_name_from_file(info.file_name);
  info.name = name ? *name : fs::path(path).stem().string();
  return info;
}

void describe_descriptor(const sy_plugin& descriptor, std::int32_t descriptor_struct_size,
                         std::int32_t cross_entropy_struct_size, std::int32_t norm_struct_size,
                         PluginInfo* info) {
  info->name = text_or_empty(descriptor.name);
  info->version = text_or_empty(descriptor.version);
  info->vendor = text_or_empty(descriptor.vendor);
  info->description = text_or_empty(descriptor.description);
  info->build_info = text_or_empty(descriptor.build_info);
  info->abi_major = descriptor.abi_major;
  info->abi_minor = descriptor.abi_minor;
  info->descriptor_struct_size = descriptor_struct_size;
  info->cross_entropy = family_info(descriptor.cross_entropy, cross_entropy_struct_size);
  info->norm = family_info(descriptor.norm, norm_struct_size);
}

PluginLibrary::~PluginLibrary() = default;

const sy_cross_entropy* PluginLibrary::cross_entropy() const {
  return descriptor_.cross_entropy;
}

const sy_norm* PluginLibrary::norm() const { return descriptor_.norm; }

LoadResult PluginLibrary::load(const std::string& path, std::shared_ptr<const HostServices> host,
                               LoadOptions options) {
  PluginInfo info = blank_plugin_info(path);
  const std::string file = info.file_name;
  try {
    if (auto problem = check_elf_file(path)) return rejected(std::move(info), *problem);

    auto handle = std::make_unique<Handle>();
    boost::dll::fs::error_code ec;
    dlerror();  // so that the message read below is this load's
    handle->library.load(boost::dll::fs::path(path),
                         boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
    if (ec || !handle->library.is_loaded()) {
      const char* why = dlerror();
      return rejected(std::move(info), file + " cannot be loaded by the dynamic linker: " +
                                           (why != nullptr ? why : ec.message()));
    }
    if (!handle->library.has(SY_PLUGIN_ENTRY_SYMBOL)) {
      return rejected(std::move(info),
                      file + " has no " SY_PLUGIN_ENTRY_SYMBOL
                             " symbol: it is not a Switchyard ABI 1 plugin (a plugin exports "
                             "exactly " SY_PLUGIN_ENTRY_SYMBOL
                             ", e.g. when built with switchyard_add_plugin())");
    }
    auto& entry = handle->library.get<const sy_plugin*(const sy_host*)>(SY_PLUGIN_ENTRY_SYMBOL);

    const sy_plugin* plugin = nullptr;
    {
      HostCallScope scope(host.get(), &info.log, options.isolated);
      try {
        plugin = entry(HostServices::table());
      } catch (const std::exception& e) {
        return rejected(std::move(info),
                        file + ": " SY_PLUGIN_ENTRY_SYMBOL " let a C++ exception escape (" +
                            e.what() + "); a plugin must catch exceptions at the ABI boundary");
      } catch (...) {
        return rejected(std::move(info),
                        file + ": " SY_PLUGIN_ENTRY_SYMBOL
                               " let an unknown C++ exception escape; a plugin must catch "
                               "exceptions at the ABI boundary");
      }
    }
    if (plugin == nullptr) {
      return rejected(std::move(info), file + ": the plugin refused to initialise (" +
                                           SY_PLUGIN_ENTRY_SYMBOL + " returned NULL); " +
                                           captured_log_summary(info.log));
    }
    info.abi_major = plugin->struct_size >= offsetof(sy_plugin, name) ? plugin->abi_major : 0;
    info.abi_minor = plugin->struct_size >= offsetof(sy_plugin, name) ? plugin->abi_minor : 0;
    info.descriptor_struct_size = static_cast<std::int32_t>(
        std::min<std::size_t>(plugin->struct_size, INT32_MAX));
    if (auto problem = check_descriptor(path, *plugin)) return rejected(std::move(info), *problem);

    std::shared_ptr<PluginLibrary> library(new PluginLibrary());
    library->host_ = std::move(host);
    library->handle_ = std::move(handle);
    library->path_ = path;
    library->descriptor_ = copy_table(*plugin);
    if (!SY_HAS_FIELD(sy_plugin, build_info, plugin->struct_size) ||
        library->descriptor_.build_info == nullptr) {
      library->descriptor_.build_info = "";
    }
    std::int32_t ce_size = 0, norm_size = 0;
    if (plugin->cross_entropy != nullptr) {
      ce_size = static_cast<std::int32_t>(plugin->cross_entropy->struct_size);
      library->cross_entropy_ = copy_table(*plugin->cross_entropy);
      library->cross_entropy_.determinism =
          known_determinism(library->cross_entropy_.determinism);
      library->descriptor_.cross_entropy = &library->cross_entropy_;
    }
    if (plugin->norm != nullptr) {
      norm_size = static_cast<std::int32_t>(plugin->norm->struct_size);
      library->norm_ = copy_table(*plugin->norm);
      library->norm_.determinism = known_determinism(library->norm_.determinism);
      library->descriptor_.norm = &library->norm_;
    }
    describe_descriptor(library->descriptor_, info.descriptor_struct_size, ce_size, norm_size,
                        &info);
    info.state = PluginState::Ok;
    info.reason.clear();
    if (options.probe) {
      std::string reason;
      if (library->probe(&reason, &info.log, options.isolated) != SY_OK) {
        info.state = PluginState::Unavailable;
        info.reason = reason;
      }
    }
    return LoadResult{std::move(library), std::move(info)};
  } catch (const std::exception& e) {
    return rejected(std::move(info), file + " could not be loaded: " + e.what());
  }
}

sy_status PluginLibrary::probe(std::string* reason, std::vector<std::string>* captured_log,
                               bool isolated) const {
  sy_error err{sizeof(sy_error), SY_OK, {}};
  sy_status status = SY_OK;
  {
    HostCallScope scope(host_.get(), captured_log, isolated);
    try {
      status = descriptor_.probe(&err);
    } catch (const std::exception& e) {
      status = SY_ERR_INTERNAL;
      std::snprintf(err.message, sizeof err.message,
                    "probe() let a C++ exception escape: %s", e.what());
    } catch (...) {
      status = SY_ERR_INTERNAL;
      std::snprintf(err.message, sizeof err.message, "probe() let a C++ exception escape");
    }
  }
  if (status != SY_OK && reason != nullptr) {
    err.message[sizeof err.message - 1] = '\0';
    *reason = std::string("probe() returned ") + status_name(status) +
              (err.message[0] != '\0' ? std::string(": ") + err.message
                                      : std::string(" without a reason"));
  }
  return status;
}

}  // namespace switchyard::detail
