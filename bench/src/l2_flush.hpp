// The L2 flush of the timing loop at evict_last priority (device.hpp, FlushKind::EvictLast).
#ifndef SWITCHYARD_BENCH_L2_FLUSH_HPP
#define SWITCHYARD_BENCH_L2_FLUSH_HPP

#include <cuda_runtime.h>

#include <cstdint>

namespace switchyard::bench {

// Queues on `stream` a write of `value` over `bytes` bytes of `buffer` (256-byte aligned, a
// multiple of 128 bytes) with an L2 evict_last policy, then a pass that sets each of the
// buffer's 128-byte lines back to evict_normal. Returns the first launch error.
cudaError_t launch_evict_last_flush(cudaStream_t stream, void* buffer, int64_t bytes, uint32_t value,
                                    int multiprocessors);

}  // namespace switchyard::bench

#endif
