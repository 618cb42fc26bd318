// What the plugin keeps between calls: the host's services, its options, the JIT engine and
// the kernels already loaded for each (specialisation, device).
#ifndef SWITCHYARD_FUSED_PLUGIN_STATE_HPP
#define SWITCHYARD_FUSED_PLUGIN_STATE_HPP

#include "ce_run.hpp"
#include "jit/engine.hpp"
#include "norm_run.hpp"

#include <switchyard/abi.h>

#include <string>

namespace switchyard::fused {

inline constexpr const char* kPluginName = "fused";

void set_host(const sy_host* host);
void log(sy_log_level level, const std::string& message);
// The plugin option `key` through sy_host.option (NULL when unset).
const char* option(const char* key);

// The cache settings the options give now (they are read per call: two Runtimes of one
// process may name different folders). Throws sy::Failure(SY_ERR_INVALID_ARGUMENT) naming a
// malformed option.
jit::CacheSettings cache_settings();
// Empty when every option of the plugin is well-formed; otherwise what is wrong.
std::string option_problem();

// The kernels of a specialisation on a CUDA device: loaded on first use (JIT engine), then
// from memory. Throws sy::Failure (SY_ERR_UNAVAILABLE without a usable device or NVRTC).
CeKernels ce_kernels(const jit::CeSpecialization& spec, int device);
NormKernels norm_kernels(const jit::NormSpecialization& spec, int device);

jit::EngineStats engine_stats();

}  // namespace switchyard::fused

#endif  // SWITCHYARD_FUSED_PLUGIN_STATE_HPP
