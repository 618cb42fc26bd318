// sy_host: the callbacks plugins use to log and to read their options.
#include "host_services.hpp"

#include "log.hpp"

#include <mutex>
#include <set>
#include <utility>

namespace switchyard::detail {
namespace {

thread_local const HostCallScope::Context* current_scope = nullptr;

// Services for callbacks outside any scope (a plugin's own threads), and the strings handed
// out on that path: they are interned forever, because the plugin may keep the pointer
// while the services they came from are already gone.
struct DefaultServices {
  std::mutex mutex;
  std::weak_ptr<const HostServices> services;
  std::set<std::string> interned;
};

DefaultServices& default_services() {
  // Immortal: plugins may call back from their static destructors at exit.
  static auto* const instance = new DefaultServices();
  return *instance;
}

const char* level_name(sy_log_level level) {
  switch (level) {
    case SY_LOG_TRACE: return "trace";
    case SY_LOG_DEBUG: return "debug";
    case SY_LOG_INFO: return "info";
    case SY_LOG_WARN: return "warn";
    case SY_LOG_ERROR: return "error";
  }
  return level < SY_LOG_TRACE ? "trace" : "error";
}

void host_log(sy_log_level level, const char* plugin, const char* message) {
  // Behind a C function pointer: nothing may escape.
  try {
    const HostCallScope::Context* scope = current_scope;
    if (scope != nullptr && scope->captured != nullptr &&
        scope->captured->size() < kMaxCapturedLogLines) {
      scope->captured->push_back(std::string(level_name(level)) + ": " +
                                 (message != nullptr ? message : "<no message>"));
    }
    if (scope == nullptr || !scope->isolated) plugin_log(level, plugin, message);
  } catch (...) {
  }
}

const char* host_option(const char* plugin, const char* key) {
  try {
    if (plugin == nullptr || key == nullptr) return nullptr;
    if (const HostCallScope::Context* scope = current_scope; scope != nullptr) {
      return scope->services != nullptr ? scope->services->option(plugin, key) : nullptr;
    }
    DefaultServices& fallback = default_services();
    std::lock_guard<std::mutex> lock(fallback.mutex);
    const std::shared_ptr<const HostServices> services = fallback.services.lock();
    if (services == nullptr) return nullptr;
    const char* value = services->option(plugin, key);
    if (value == nullptr) return nullptr;
    return fallback.interned.insert(value).first->c_str();
  } catch (...) {
    return nullptr;
  }
}

const sy_host kHostTable = {
    sizeof(sy_host), SY_ABI_MAJOR, SY_ABI_MINOR, SWITCHYARD_VERSION, &host_log, &host_option,
};

}  // namespace

HostServices::HostServices(std::map<std::string, std::string> options)
    : options_(std::move(options)) {}

std::shared_ptr<const HostServices> HostServices::from_settings(const Settings& settings) {
  std::map<std::string, std::string> options;
  for (const auto& [key, setting] : settings.plugin_options) options[key] = setting.value;
  return std::make_shared<const HostServices>(std::move(options));
}

const sy_host* HostServices::table() { return &kHostTable; }

const char* HostServices::option(const char* plugin, const char* key) const {
  if (plugin == nullptr || key == nullptr) return nullptr;
  for (const std::string& prefix : {std::string(plugin), std::string("*")}) {
    const auto found = options_.find(prefix + "." + key);
    if (found != options_.end()) return found->second.c_str();
  }
  return nullptr;
}

void HostServices::make_default(const std::shared_ptr<const HostServices>& services) {
  DefaultServices& fallback = default_services();
  std::lock_guard<std::mutex> lock(fallback.mutex);
  fallback.services = services;
}

HostCallScope::HostCallScope(const HostServices* services, std::vector<std::string>* captured,
                             bool isolated) noexcept
    : context_{services, captured, isolated}, previous_(current_scope) {
  current_scope = &context_;
}

HostCallScope::~HostCallScope() { current_scope = previous_; }

}  // namespace switchyard::detail
