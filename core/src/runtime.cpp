// switchyard::Runtime: settings, discovery, inspection, selection and binding.
#include "backend_names.hpp"
#include "discovery.hpp"
#include "host_services.hpp"
#include "isolated_load.hpp"
#include "log.hpp"
#include "operator_state.hpp"
#include "select_backend.hpp"

#include <switchyard/switchyard.hpp>

#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

namespace switchyard {
namespace {

namespace fs = std::filesystem;

BackendInfo backend_info(const detail::Selected& selected, sy_determinism determinism,
                         uint32_t features) {
  BackendInfo backend;
  const PluginInfo& plugin = selected.selection.plugin;
  backend.name = plugin.name;
  backend.version = plugin.version;
  backend.path = plugin.path;
  backend.vendor = plugin.vendor;
  backend.determinism = determinism;
  backend.features = features;
  backend.requested = selected.selection.requested;
  return backend;
}

// The caller's problem as the plugin will see it: exactly sizeof(P), struct_size set to it.
// A problem from a newer header (larger struct_size) is cut to the fields this host knows.
template <class P>
P bound_problem(const P& problem, const char* type_name) {
  if (problem.struct_size < sizeof(P)) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                std::string(type_name) + ".struct_size is " + std::to_string(problem.struct_size) +
                    ", expected at least sizeof(" + type_name + ") = " +
                    std::to_string(sizeof(P)) + "; set it before filling in the problem");
  }
  P copy = problem;
  copy.struct_size = sizeof(P);
  return copy;
}

template <class Table, class P>
std::int64_t check_and_size(const Table& table, const P& problem, const BackendInfo& backend,
                            Family family, const detail::HostServices& host) {
  sy_error err{sizeof(sy_error), SY_OK, {}};
  sy_status status = SY_OK;
  std::int64_t bytes = 0;
  {
    detail::HostCallScope scope(&host, nullptr);
    status = table.supports(&problem, &err);
    if (status == SY_OK) status = table.workspace_size(&problem, &bytes, &err);
  }
  err.message[sizeof err.message - 1] = '\0';
  if (status != SY_OK) {
    throw Error(status, "The " + std::string(family_name(family)) + " backend '" + backend.name +
                            "' cannot serve this problem (" + status_name(status) + "): " +
                            (err.message[0] != '\0' ? err.message : "it gave no reason") +
                            ". Next step: change the problem, or choose another backend "
                            "(requested by " + backend.requested.describe() + ").");
  }
  if (bytes < 0) {
    throw Error(SY_ERR_INTERNAL, "The " + std::string(family_name(family)) + " backend '" +
                                     backend.name + "' reported a negative workspace size (" +
                                     std::to_string(bytes) + " bytes)");
  }
  return bytes;
}

}  // namespace

struct Runtime::Impl {
  Settings settings;
  std::shared_ptr<const detail::HostServices> host;
  mutable detail::LibraryCache cache;
  mutable std::mutex selections_mutex;
  mutable std::map<Family, detail::Selected> selections;

  detail::Selected select(Family family) const {
    {
      std::lock_guard<std::mutex> lock(selections_mutex);
      const auto found = selections.find(family);
      if (found != selections.end()) return found->second;
    }
    // Not under the lock: a failed selection loads every candidate in child processes.
    detail::Selected selected = detail::select_backend(family, settings, host, cache);
    std::lock_guard<std::mutex> lock(selections_mutex);
    return selections.emplace(family, std::move(selected)).first->second;
  }
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->settings = resolve_settings(options);  // also applies the log level
  impl_->host = detail::HostServices::from_settings(impl_->settings);
  detail::HostServices::make_default(impl_->host);
}

Runtime::~Runtime() = default;
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;

const Settings& Runtime::settings() const { return impl_->settings; }

const sy_host* Runtime::host() const { return detail::HostServices::table(); }

std::vector<SearchLocation> Runtime::discover(bool load) const {
  std::vector<SearchLocation> locations = detail::list_candidates(impl_->settings);
  if (!load) return locations;
  for (SearchLocation& location : locations) {
    for (PluginInfo& info : location.candidates) {
      if (info.state != PluginState::Disabled) info = detail::isolated_load(info.path, *impl_->host);
    }
  }
  return locations;
}

PluginInfo Runtime::inspect(const std::string& name_or_path) const {
  std::string path;
  if (detail::looks_like_path(name_or_path)) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(name_or_path, ec);
    path = ec ? name_or_path : absolute.lexically_normal().string();
  } else {
    const std::string name = detail::renamed_backend(name_or_path).value_or(name_or_path);
    const std::optional<detail::FoundFile> found =
        detail::valid_plugin_name(name) ? detail::find_plugin_file(impl_->settings, name)
                                        : std::nullopt;
    if (!found) {
      PluginInfo info;
      info.name = name;
      info.file_name = detail::plugin_file_name(name);
      info.state = PluginState::Rejected;
      std::string searched;
      for (const detail::SearchEntry& entry : detail::search_path(impl_->settings))
        searched += (searched.empty() ? "" : ", ") + entry.path;
      info.reason = "no file named " + info.file_name + " was found on the search path (" +
                    searched + ")";
      return info;
    }
    path = found->path;
  }
  PluginInfo info = detail::blank_plugin_info(path);
  if (const auto pattern = detail::disabling_setting(impl_->settings, info.name, info.file_name)) {
    info.state = PluginState::Disabled;
    info.reason = detail::disabled_reason(*pattern);
    return info;
  }
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    info.state = PluginState::Rejected;
    info.reason = info.file_name + " does not exist (" + path + ")";
    return info;
  }
  return detail::isolated_load(path, *impl_->host);
}

Selection Runtime::select(Family family) const { return impl_->select(family).selection; }

CrossEntropy Runtime::cross_entropy(const sy_ce_problem& problem) const {
  const detail::Selected selected = impl_->select(Family::CrossEntropy);
  const sy_cross_entropy& table = *selected.library->cross_entropy();
  auto state = std::make_shared<CrossEntropy::State>();
  state->backend = backend_info(selected, table.determinism, table.features);
  state->problem = bound_problem(problem, "sy_ce_problem");
  state->table = &table;
  state->library = selected.library;
  state->workspace_bytes = check_and_size(table, state->problem, state->backend,
                                          Family::CrossEntropy, selected.library->host());
  if (table.forward_collectives != nullptr) {
    detail::HostCallScope scope(&selected.library->host(), nullptr);
    state->backend.forward_collectives = table.forward_collectives(&state->problem);
  }
  return CrossEntropy(std::move(state));
}

Norm Runtime::norm(const sy_norm_problem& problem) const {
  const detail::Selected selected = impl_->select(Family::Norm);
  const sy_norm& table = *selected.library->norm();
  auto state = std::make_shared<Norm::State>();
  state->backend = backend_info(selected, table.determinism, table.features);
  state->problem = bound_problem(problem, "sy_norm_problem");
  state->table = &table;
  state->library = selected.library;
  state->workspace_bytes =
      check_and_size(table, state->problem, state->backend, Family::Norm, selected.library->host());
  return Norm(std::move(state));
}

}  // namespace switchyard
