// native_cuda_check: the native plugin's CUDA path on a real GPU, beyond what the conformance
// cases reach (`switchyard check native --device cuda` runs those): large and odd sizes (grid
// loops, multi-block dgamma/dbeta), non-default streams, replay and batch invariance at size,
// unaligned workspaces, in-place norms, and the refusals that need a GPU to happen (host memory
// labelled as CUDA, wrong devices).
#ifndef SWITCHYARD_TESTS_GPU_NATIVE_CUDA_CHECKS_HPP
#define SWITCHYARD_TESTS_GPU_NATIVE_CUDA_CHECKS_HPP

#include <switchyard/switchyard.hpp>

#include <cuda_runtime_api.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpu_test {

struct NativeContext {
  const switchyard::Runtime* runtime = nullptr;
  int devices = 0;
  cudaStream_t stream = nullptr;  // a non-blocking stream of device 0
};

// Thrown by a check that cannot run here (e.g. it needs two GPUs).
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A check returns the PASS detail, or throws std::exception (FAIL) or Skip.
struct Check {
  std::string name;
  std::function<std::string(const NativeContext&)> run;
};

std::vector<Check> ce_checks();
std::vector<Check> norm_checks();
std::vector<Check> refusal_checks();

}  // namespace gpu_test

#endif
