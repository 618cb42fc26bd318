// A stream hold that is GPU work: the timed repetition's first mark then follows a kernel on
// the device, as in peers.py (torch.cuda._sleep), instead of waiting for the completion of a
// host function to be signalled back to the device.
#include "gpu_hold.hpp"

#include <cstdint>

namespace switchyard::bench {
namespace {

__device__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(uint64_t nanoseconds) {
  const uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < nanoseconds) __nanosleep(500);
}

}  // namespace

cudaError_t launch_gpu_hold(cudaStream_t stream, int microseconds) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<uint64_t>(microseconds) * 1000u);
  return cudaGetLastError();
}

}  // namespace switchyard::bench
