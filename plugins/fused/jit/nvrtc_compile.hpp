// CUDA C++ source -> cubin for one architecture (or PTX, when NVRTC is older than the GPU).
#ifndef SWITCHYARD_FUSED_JIT_NVRTC_COMPILE_HPP
#define SWITCHYARD_FUSED_JIT_NVRTC_COMPILE_HPP

#include "cache_format.hpp"
#include "nvrtc_library.hpp"

#include <string>
#include <vector>

namespace switchyard::fused::jit {

struct CompileTarget {
  int device_arch = 0;  // the GPU's, major*10+minor (90)
  int code_arch = 0;    // what the code is compiled for (== device_arch for a cubin)
  cache::PayloadKind kind = cache::PayloadKind::Cubin;
  std::vector<std::string> options;  // the NVRTC command line: part of the cache key
};

// A cubin for the device's exact architecture when NVRTC supports it; otherwise PTX for the
// newest virtual architecture NVRTC has that the device can run (the driver finishes it).
// Throws sy::Failure(SY_ERR_UNAVAILABLE) when NVRTC knows no architecture the device runs.
CompileTarget choose_target(const NvrtcLibrary& nvrtc, int device_arch);

struct CompileOutput {
  std::string payload;  // the cubin, or the PTX including its terminating NUL
  std::string log;      // NVRTC's messages (warnings), may be empty
  double milliseconds = 0;
};

// Throws sy::Failure(SY_ERR_INTERNAL) with NVRTC's log when the source does not compile (a bug
// in the generator: the source is ours, not the caller's).
CompileOutput compile(const NvrtcLibrary& nvrtc, const std::string& source,
                      const std::string& program_name, const CompileTarget& target);

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_NVRTC_COMPILE_HPP
