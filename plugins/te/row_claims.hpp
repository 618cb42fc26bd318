// Rows claimed by a persistent kernel's blocks (or clusters) as they free up, from a counter in
// the caller's workspace, rather than dealt round-robin: multiprocessors do not run at one pace,
// and with rows dealt in turn the slowest one's rows set the kernel's time. Used by grad in
// forward (ce_slice_kernels.cu) and the streamed norm forward (norm_forward.cu).
//
// The workspace comes in any state, so every launch zeroes its counter first, with a one-thread
// kernel that allows a programmatic dependent launch: the persistent kernel, launched with
// programmatic_serialization() (cuda_support.hpp), is scheduled at once and its first rows'
// copies do not queue behind a memset; only its claiming thread waits (wait_for_previous_grid,
// te_device.cuh) before its first claim. Measured against a cudaMemsetAsync ahead of the launch: grad in
// forward 0.2879 -> 0.2871 ms (twelfth session).
#ifndef SWITCHYARD_TE_ROW_CLAIMS_HPP
#define SWITCHYARD_TE_ROW_CLAIMS_HPP

#include <cstdint>

namespace switchyard::te {

// The workspace bytes a counter takes (8, padded so that what follows stays 256-byte aligned).
// No CUDA header here: the plans (and tests/te, which replays them on the CPU) include it.
constexpr int64_t kRowClaimsBytes = 256;

// Enqueues `*claims = 0` on `stream` (a cudaStream_t); the next kernel on the stream must be
// the persistent one. Throws (check_cuda) when the launch fails.
void launch_zero_row_claims(unsigned long long* claims, void* stream);

}  // namespace switchyard::te

#endif
