// The one device rule of both families: fused runs on CUDA devices (cuda:N) only.
#ifndef SWITCHYARD_FUSED_PROBLEM_DEVICE_HPP
#define SWITCHYARD_FUSED_PROBLEM_DEVICE_HPP

#include <switchyard/plugin_helpers.hpp>

namespace switchyard::fused {

// UNSUPPORTED for a device other than CUDA, INVALID_ARGUMENT for a negative device id.
inline void require_cuda_problem_device(DLDevice device) {
  if (device.device_type != kDLCUDA)
    sy::unsupported("problem.device = " + sy::device_name(device) +
                    ": fused runs on CUDA devices only (cuda:N); use native for CPU tensors");
  if (device.device_id < 0)
    sy::invalid_argument("problem.device = " + sy::device_name(device) +
                         " has a negative device id");
}

}  // namespace switchyard::fused

#endif  // SWITCHYARD_FUSED_PROBLEM_DEVICE_HPP
