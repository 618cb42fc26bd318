// The core's logger and the sy_host.log function plugins call.
#include "log.hpp"

#include "did_you_mean.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::detail {
namespace {

constexpr const char* kLevelVariable = "SWITCHYARD_LOG_LEVEL";
constexpr spdlog::level::level_enum kDefaultLevel = spdlog::level::warn;

// The names SWITCHYARD_LOG_LEVEL accepts, in the order messages list them.
const std::array<std::pair<const char*, spdlog::level::level_enum>, 6> kLevels{{
    {"trace", spdlog::level::trace},
    {"debug", spdlog::level::debug},
    {"info", spdlog::level::info},
    {"warn", spdlog::level::warn},
    {"error", spdlog::level::err},
    {"off", spdlog::level::off},
}};

std::string valid_level_list() {
  std::string list;
  for (const auto& level : kLevels) list += (list.empty() ? "" : ", ") + std::string(level.first);
  return list;
}

std::string normalise(const std::string& name) {
  const auto first = name.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = name.find_last_not_of(" \t\r\n");
  std::string trimmed = name.substr(first, last - first + 1);
  std::transform(trimmed.begin(), trimmed.end(), trimmed.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return trimmed;
}

// Case-insensitive; "warning" is accepted too because spdlog prints that name.
bool parse_level(const std::string& name, spdlog::level::level_enum* level) {
  const std::string wanted = normalise(name);
  if (wanted == "warning") {
    *level = spdlog::level::warn;
    return true;
  }
  for (const auto& candidate : kLevels) {
    if (wanted == candidate.first) {
      *level = candidate.second;
      return true;
    }
  }
  return false;
}

// Reads SWITCHYARD_LOG_LEVEL once, when the logger is created. A bad value never stops the
// program: it falls back to the default and says which names would have worked.
void apply_environment_level(spdlog::logger& log) {
  const char* value = std::getenv(kLevelVariable);
  log.set_level(kDefaultLevel);
  if (value == nullptr || *value == '\0') return;
  spdlog::level::level_enum level = kDefaultLevel;
  if (parse_level(value, &level)) {
    log.set_level(level);
    return;
  }
  std::vector<std::string> names;
  for (const auto& candidate : kLevels) names.emplace_back(candidate.first);
  log.warn("{}=\"{}\" is not a log level{}; using \"warn\". Valid levels: {}.", kLevelVariable,
           value, did_you_mean(value, names), valid_level_list());
}

std::shared_ptr<spdlog::logger> make_logger() {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  // Not registered with spdlog's global registry: the host program may use spdlog itself
  // (with its own "switchyard" logger, or spdlog::drop_all()) and must not disturb ours.
  auto log = std::make_shared<spdlog::logger>("switchyard", std::move(sink));
  log->set_pattern("[%n] [%^%l%$] %v");
  log->flush_on(spdlog::level::warn);
  apply_environment_level(*log);
  return log;
}

spdlog::level::level_enum to_spdlog(sy_log_level level) {
  switch (level) {
    case SY_LOG_TRACE: return spdlog::level::trace;
    case SY_LOG_DEBUG: return spdlog::level::debug;
    case SY_LOG_INFO: return spdlog::level::info;
    case SY_LOG_WARN: return spdlog::level::warn;
    case SY_LOG_ERROR: return spdlog::level::err;
  }
  // A level from a newer ABI (or garbage): never drop it silently, never fail.
  return level < SY_LOG_TRACE ? spdlog::level::trace : spdlog::level::err;
}

}  // namespace

spdlog::logger& logger() {
  // Intentionally immortal: plugins and the loader may log from static destructors at exit,
  // after a function-local static would already have been destroyed.
  static const auto* const instance = new std::shared_ptr<spdlog::logger>(make_logger());
  return **instance;
}

bool set_log_level(const std::string& name) {
  spdlog::level::level_enum level = kDefaultLevel;
  if (!parse_level(name, &level)) return false;
  logger().set_level(level);
  return true;
}

void plugin_log(sy_log_level level, const char* plugin, const char* message) {
  // Behind a C function pointer: nothing may escape, whatever the plugin passes.
  try {
    logger().log(to_spdlog(level), "[plugin:{}] {}", plugin != nullptr ? plugin : "<unnamed>",
                 message != nullptr ? message : "<no message>");
  } catch (...) {
  }
}

bool warn_once(const std::string& key, const std::string& message) {
  struct SeenKeys {
    std::mutex mutex;
    std::set<std::string> keys;
  };
  // Immortal for the same reason as the logger.
  static auto* const seen = new SeenKeys();
  {
    std::lock_guard<std::mutex> lock(seen->mutex);
    if (!seen->keys.insert(key).second) return false;
  }
  logger().warn("{}", message);
  return true;
}

}  // namespace switchyard::detail
