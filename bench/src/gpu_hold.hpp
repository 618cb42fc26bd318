// The GPU-side stream hold of the timing loop (device.hpp, HoldKind::Gpu).
#ifndef SWITCHYARD_BENCH_GPU_HOLD_HPP
#define SWITCHYARD_BENCH_GPU_HOLD_HPP

#include <cuda_runtime.h>

namespace switchyard::bench {

// Queues on `stream` one single-thread kernel that spins for `microseconds` on the GPU's
// nanosecond timer. Returns the launch's error.
cudaError_t launch_gpu_hold(cudaStream_t stream, int microseconds);

}  // namespace switchyard::bench

#endif
