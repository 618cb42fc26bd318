// The forward and backward row kernels for x dtype __half (see kernels.cuh).
#include "kernels.cuh"
#include "launch.hpp"

namespace switchyard::apex {

int launch_forward_f16(const ForwardParams& params, const LaunchConfig& config) {
  return static_cast<int>(launch_forward_for<__half>(params, config));
}

int launch_backward_rows_f16(const BackwardParams& params, const LaunchConfig& config) {
  return static_cast<int>(launch_backward_rows_for<__half>(params, config));
}

}  // namespace switchyard::apex
