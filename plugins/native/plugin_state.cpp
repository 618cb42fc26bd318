#include "plugin_state.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <atomic>

namespace switchyard::native {
namespace {
std::atomic<const sy_host*> g_host{nullptr};
}

void set_host(const sy_host* host) { g_host.store(host, std::memory_order_release); }
const sy_host* host() { return g_host.load(std::memory_order_acquire); }

void log(sy_log_level level, const std::string& message) {
  sy::log(host(), level, kPluginName, message);
}

}  // namespace switchyard::native
