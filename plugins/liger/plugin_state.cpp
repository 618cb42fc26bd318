#include "plugin_state.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <atomic>

namespace switchyard::liger {
namespace {
std::atomic<const sy_host*> g_host{nullptr};
// Two independent atomics: a call sees each option as set by some entry call; the entry is
// never concurrent with itself and calls normally follow it.
std::atomic<int> g_casting_mode{static_cast<int>(CastingMode::Gemma)};
std::atomic<float> g_lse_square_scale{0.0f};
}  // namespace

void set_host(const sy_host* host) { g_host.store(host, std::memory_order_release); }
const sy_host* host() { return g_host.load(std::memory_order_acquire); }

void set_options(const Options& options) {
  g_casting_mode.store(static_cast<int>(options.casting_mode), std::memory_order_release);
  g_lse_square_scale.store(options.lse_square_scale, std::memory_order_release);
}

Options options() {
  Options o;
  o.casting_mode = static_cast<CastingMode>(g_casting_mode.load(std::memory_order_acquire));
  o.lse_square_scale = g_lse_square_scale.load(std::memory_order_acquire);
  return o;
}

void log(sy_log_level level, const std::string& message) {
  sy::log(host(), level, kPluginName, message);
}

}  // namespace switchyard::liger
