// graph_capture_check: a plugin family that declares SY_FEATURE_GRAPH_CAPTURE must give, from a
// CUDA graph of its calls, the very bits its eager calls give (abi.h: no host
// synchronisation, no allocation, only work on the caller's stream). The cases bind through
// the public host API, run the calls eagerly on a non-blocking stream, capture the same calls
// (cudaStreamCaptureModeThreadLocal), and launch the graph twice over poisoned outputs.
#ifndef SWITCHYARD_TESTS_GPU_GRAPH_CAPTURE_HPP
#define SWITCHYARD_TESTS_GPU_GRAPH_CAPTURE_HPP

#include "gpu_tensor.hpp"

#include <switchyard/switchyard.hpp>

#include <cuda_runtime_api.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpu_test::graph {

// Thrown by a case the plugin does not declare (a feature, a kind, a dtype) or refuses with
// SY_ERR_UNSUPPORTED; the message says which.
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One output of the captured calls. A written output is reset to the poison pattern (every
// byte 0xFF: NaN for floats, -1 for integers) before each run; an accumulated one (dγ/dβ with
// SY_NORM_ACCUMULATE_GRAD_WEIGHT, which the calls add into) is restored to its first contents.
struct Output {
  std::string name;
  GpuTensor* tensor = nullptr;  // compact (no row padding)
  bool accumulated = false;
};

// The calls of one case, enqueued on `stream`; a failing call throws (switchyard::Error).
using Calls = std::function<void(cudaStream_t stream)>;

// Runs `calls` eagerly on `stream` (every output must then be written), captures them into a
// graph, instantiates it and launches it twice, resetting outputs and workspace before every
// run; every output of both launches must be bit-identical to the eager run. Returns the PASS
// detail; throws std::runtime_error naming the first difference, or the CUDA error (name and
// string) when capture, instantiation or a launch fails.
std::string eager_versus_graph(cudaStream_t stream, const std::vector<Output>& outputs,
                               void* workspace, size_t workspace_bytes, const Calls& calls);

// What one plugin's cases run with.
struct Context {
  const switchyard::Runtime* runtime = nullptr;  // selects the plugin under test for both families
  switchyard::FamilyInfo declared;               // of the family the case belongs to
  cudaStream_t stream = nullptr;                 // non-blocking, device 0
};

// A case returns the PASS detail, or throws Skip (SKIP) or another std::exception (FAIL).
struct Case {
  std::string name;
  std::function<std::string(const Context&)> run;
};

std::vector<Case> cross_entropy_cases();
std::vector<Case> norm_cases();

// Rethrows a binding failure: Skip when the plugin refuses the problem as unsupported (its
// documented right), the error itself otherwise.
[[noreturn]] void rethrow_binding(const switchyard::Error& error);

}  // namespace gpu_test::graph

#endif
