// The forward and backward row kernels for x dtype __nv_bfloat16 (see kernels.cuh).
#include "kernels.cuh"
#include "launch.hpp"

namespace switchyard::apex {

int launch_forward_bf16(const ForwardParams& params, const LaunchConfig& config) {
  return static_cast<int>(launch_forward_for<__nv_bfloat16>(params, config));
}

int launch_backward_rows_bf16(const BackwardParams& params, const LaunchConfig& config) {
  return static_cast<int>(launch_backward_rows_for<__nv_bfloat16>(params, config));
}

}  // namespace switchyard::apex
