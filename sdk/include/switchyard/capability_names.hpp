// The words for a family descriptor's capability bits (dtypes, devices, features) and its
// determinism, as the CLI prints them and the conformance suite reports them: "float32",
// "cuda", "label_smoothing", "deterministic". Header-only C++17.
#ifndef SWITCHYARD_CAPABILITY_NAMES_HPP
#define SWITCHYARD_CAPABILITY_NAMES_HPP

#include <switchyard/loss.h>
#include <switchyard/norm.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sy {

using BitNames = std::vector<std::pair<uint32_t, const char*>>;

// The names of the bits set in `bits`, in the table's order; a set bit the table does not
// name is "bitN".
inline std::vector<std::string> bit_names(uint32_t bits, const BitNames& names) {
  std::vector<std::string> words;
  uint32_t known = 0;
  for (const auto& [bit, name] : names) {
    known |= bit;
    if ((bits & bit) != 0) words.emplace_back(name);
  }
  for (uint32_t i = 0; i < 32; ++i) {
    const uint32_t bit = 1u << i;
    if ((bits & bit) != 0 && (known & bit) == 0) words.push_back("bit" + std::to_string(i));
  }
  return words;
}

// SY_DTYPE_* bits.
inline std::vector<std::string> dtype_names(uint32_t dtypes) {
  static const BitNames names = {
      {SY_DTYPE_F32, "float32"}, {SY_DTYPE_F16, "float16"}, {SY_DTYPE_BF16, "bfloat16"}};
  return bit_names(dtypes, names);
}

// SY_DEVICE_BIT(DLDeviceType) bits.
inline std::vector<std::string> device_names(uint32_t devices) {
  static const BitNames names = {
      {SY_DEVICE_BIT(kDLCPU), "cpu"},
      {SY_DEVICE_BIT(kDLCUDA), "cuda"},
      {SY_DEVICE_BIT(kDLCUDAHost), "cuda_host"},
      {SY_DEVICE_BIT(kDLOpenCL), "opencl"},
      {SY_DEVICE_BIT(kDLVulkan), "vulkan"},
      {SY_DEVICE_BIT(kDLMetal), "metal"},
      {SY_DEVICE_BIT(kDLVPI), "vpi"},
      {SY_DEVICE_BIT(kDLROCM), "rocm"},
      {SY_DEVICE_BIT(kDLROCMHost), "rocm_host"},
      {SY_DEVICE_BIT(kDLExtDev), "ext_dev"},
      {SY_DEVICE_BIT(kDLCUDAManaged), "cuda_managed"},
  };
  return bit_names(devices, names);
}

// SY_CE_FEATURE_* bits (and SY_FEATURE_GRAPH_CAPTURE).
inline std::vector<std::string> ce_feature_names(uint32_t features) {
  static const BitNames names = {
      {SY_CE_FEATURE_LABEL_SMOOTHING, "label_smoothing"},
      {SY_CE_FEATURE_IGNORE_INDEX, "ignore_index"},
      {SY_CE_FEATURE_ARGMAX, "argmax"},
      {SY_CE_FEATURE_GRAD_IN_FORWARD, "grad_in_forward"},
      {SY_CE_FEATURE_TENSOR_PARALLEL, "tensor_parallel"},
      {SY_FEATURE_GRAPH_CAPTURE, "graph_capture"},
  };
  return bit_names(features, names);
}

// SY_NORM_FEATURE_* bits (and SY_FEATURE_GRAPH_CAPTURE).
inline std::vector<std::string> norm_feature_names(uint32_t features) {
  static const BitNames names = {
      {SY_NORM_FEATURE_LAYER, "layer_norm"},
      {SY_NORM_FEATURE_RMS, "rms_norm"},
      {SY_NORM_FEATURE_L2, "l2_norm"},
      {SY_NORM_FEATURE_ZERO_CENTERED_GAMMA, "zero_centered_gamma"},
      {SY_NORM_FEATURE_RESIDUAL, "residual"},
      {SY_NORM_FEATURE_MEMORY_EFFICIENT, "memory_efficient"},
      {SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT, "accumulate_grad_weight"},
      {SY_NORM_FEATURE_SM_MARGIN, "sm_margin"},
      {SY_FEATURE_GRAPH_CAPTURE, "graph_capture"},
  };
  return bit_names(features, names);
}

inline const char* determinism_name(sy_determinism determinism) {
  switch (determinism) {
    case SY_DETERMINISTIC: return "deterministic";
    case SY_NONDETERMINISTIC: return "nondeterministic";
    case SY_DETERMINISM_UNKNOWN: return "unknown";
  }
  return "invalid";
}

}  // namespace sy

#endif  // SWITCHYARD_CAPABILITY_NAMES_HPP
