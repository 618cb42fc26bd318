#include "test_host.hpp"

#include <mutex>

namespace switchyard::test {
namespace {

struct HostState {
  std::mutex mutex;
  std::map<std::string, std::map<std::string, std::string>> options;  // plugin -> key -> value
  std::vector<std::string> log;
};

HostState& state() {
  static HostState s;
  return s;
}

const char* host_option(const char* plugin, const char* key) {
  HostState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto options = s.options.find(plugin);
  if (options == s.options.end()) return nullptr;
  const auto found = options->second.find(key);
  return found == options->second.end() ? nullptr : found->second.c_str();
}

void host_log_line(sy_log_level level, const char* plugin, const char* message) {
  static const char* const names[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR"};
  HostState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const char* name = level >= 0 && level <= 4 ? names[level] : "?";
  s.log.push_back(std::string(name) + " [" + plugin + "] " + message);
}

const sy_host kHost = {sizeof(sy_host), SY_ABI_MAJOR,  SY_ABI_MINOR,
                       "test",          host_log_line, host_option};

}  // namespace

const sy_host* test_host() { return &kHost; }

void set_host_options(const std::string& plugin, std::map<std::string, std::string> options) {
  HostState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.options[plugin] = std::move(options);
}

std::vector<std::string> host_log_lines() {
  HostState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.log;
}

void clear_host_log_lines() {
  HostState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.log.clear();
}

}  // namespace switchyard::test
