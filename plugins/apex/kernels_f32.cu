// The forward and backward row kernels for x dtype float (see kernels.cuh).
#include "kernels.cuh"
#include "launch.hpp"

namespace switchyard::apex {

int launch_forward_f32(const ForwardParams& params, const LaunchConfig& config) {
  return static_cast<int>(launch_forward_for<float>(params, config));
}

int launch_backward_rows_f32(const BackwardParams& params, const LaunchConfig& config) {
  return static_cast<int>(launch_backward_rows_for<float>(params, config));
}

}  // namespace switchyard::apex
