// The launchers the host side calls, one set per x dtype (each in its own translation unit,
// kernels_<dtype>.cu, so that they build in parallel). No CUDA types: each returns a
// cudaError_t as int (0 = cudaSuccess).
#ifndef SWITCHYARD_APEX_LAUNCH_HPP
#define SWITCHYARD_APEX_LAUNCH_HPP

#include "kernel_types.hpp"

namespace switchyard::apex {

int launch_forward_f32(const ForwardParams& params, const LaunchConfig& config);
int launch_forward_bf16(const ForwardParams& params, const LaunchConfig& config);
int launch_forward_f16(const ForwardParams& params, const LaunchConfig& config);

// dx, and the per-chunk dγ/dβ sums when params.partial_* are set.
int launch_backward_rows_f32(const BackwardParams& params, const LaunchConfig& config);
int launch_backward_rows_bf16(const BackwardParams& params, const LaunchConfig& config);
int launch_backward_rows_f16(const BackwardParams& params, const LaunchConfig& config);

// dweight/dbias from the per-chunk sums (chunk order), written in grad_weight_dtype or added
// into fp32 with params.accumulate. Runs for rows == 0 too (writes zeros).
int launch_final_sums(const BackwardParams& params, const LaunchConfig& config);

// cudaSuccess when the kernels have an image for the calling thread's current device.
int kernel_image_status();

// "cudaErrorNoDevice (no CUDA-capable device is detected)".
const char* cuda_error_name(int error);
const char* cuda_error_string(int error);

}  // namespace switchyard::apex

#endif
