// Launch geometry of the norm kernels: functions of the hidden size alone (never of the GPU,
// the alignment or the row count), so that which columns a thread owns, and therefore the order
// of every sum, is fixed by the problem. Compiled by g++ (norm_op.cpp, the tests) and nvcc.
#ifndef SWITCHYARD_LIGER_KERNELS_NORM_GEOMETRY_HPP
#define SWITCHYARD_LIGER_KERNELS_NORM_GEOMETRY_HPP

#include "launch.hpp"

#include <cstdint>

namespace switchyard::liger {

// Forward, register path: a thread holds up to this many chunks of its row in registers.
constexpr int kNormForwardChunksPerThread = 4;
// Backward, register path: at most this many threads (so 128 registers a thread: a 1024-thread
// block had 64 and spilled), each holding one or two chunks (H <= 8192); wider rows take the
// shared-memory backward.
constexpr int kNormBackwardMaxThreads = 512;
constexpr int kNormBackwardChunksPerThread = 2;

// constexpr: the kernels call it too (--expt-relaxed-constexpr).
constexpr int64_t norm_chunks(int64_t hidden) { return (hidden + kChunk - 1) / kChunk; }

inline int64_t round_up_to_warps(int64_t threads) {
  threads = (threads + 31) / 32 * 32;
  return threads < 32 ? 32 : threads;
}

// Forward threads per row: about four chunks per thread (16-byte loads, all issued before the
// first use), at most kMaxRowThreads. H = 4096 -> 128 threads, 8192 -> 256, 16384 -> 512.
// Above 16384 this is 512 threads with more than four chunks each: the re-reading forward.
inline int norm_forward_threads(int64_t hidden) {
  const int64_t per = kNormForwardChunksPerThread;
  int64_t threads = round_up_to_warps((norm_chunks(hidden) + per - 1) / per);
  if (threads > kMaxRowThreads) threads = kMaxRowThreads;
  return static_cast<int>(threads);
}

// Backward threads per row block (register path, H <= 8192): one chunk per thread up to 512
// chunks (H = 4096 -> 512), else two (H = 8192 -> 512 x 2). Wider rows: row_threads(H) (the
// shared-memory path, whose shared size norm_backward_shared_bytes computes from row_threads).
inline int norm_backward_threads(int64_t hidden) {
  const int64_t chunks = norm_chunks(hidden);
  if (chunks <= kNormBackwardMaxThreads) return static_cast<int>(round_up_to_warps(chunks));
  const int64_t per = kNormBackwardChunksPerThread;
  if (chunks <= kNormBackwardMaxThreads * per)
    return static_cast<int>(round_up_to_warps((chunks + per - 1) / per));
  return row_threads(hidden);
}

}  // namespace switchyard::liger

#endif
