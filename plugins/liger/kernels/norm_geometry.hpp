// Launch geometry of the norm kernels: functions of the problem (the hidden size; for the
// backward also the norm kind and the row dtypes; never of the GPU, the alignment or the row
// count), so that which columns a thread owns, and therefore the order of every sum, is fixed by
// the problem. Compiled by g++ (norm_op.cpp, the tests) and nvcc.
#ifndef SWITCHYARD_LIGER_KERNELS_NORM_GEOMETRY_HPP
#define SWITCHYARD_LIGER_KERNELS_NORM_GEOMETRY_HPP

#include "launch.hpp"

#include <cstdint>

namespace switchyard::liger {

// Forward, register path: a thread holds up to this many chunks of its row in registers.
constexpr int kNormForwardChunksPerThread = 4;
// Backward, register path: at most this many threads (so 128 registers a thread: a 1024-thread
// block had 64 and spilled), each holding up to two chunks, or four for LayerNorm rows of one
// 16-bit dtype, not memory-efficient (more rows per SM at once); rows of more than
// kNormBackwardRegisterMaxChunks chunks (H > 8192) take the shared-memory backward.
constexpr int kNormBackwardMaxThreads = 512;
constexpr int kNormBackwardChunksPerThread = 2;
constexpr int kNormBackwardWideChunksPerThread = 4;
constexpr int64_t kNormBackwardRegisterMaxChunks =
    int64_t{kNormBackwardMaxThreads} * kNormBackwardChunksPerThread;

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

// Whether the backward's register path holds four chunks a thread: LayerNorm, not
// memory-efficient, dy, x_or_y and dx (and so d_residual_out) of one 16-bit dtype. Its dgamma
// and dbeta column sums are 64 floats a thread (~127 registers; two to four 128-register blocks
// per SM at H = 8192 / 4096).
inline bool norm_backward_four_chunks(NormKind kind, bool memory_efficient, Dt dy, Dt x_or_y,
                                      Dt dx) {
  return kind == NormKind::Layer && !memory_efficient && dy == x_or_y && dy == dx &&
         dx != Dt::F32;
}

// Chunks a backward thread holds at most on the register path: 4 (above), else 2.
inline int norm_backward_chunks_per_thread(bool four_chunks) {
  return four_chunks ? kNormBackwardWideChunksPerThread : kNormBackwardChunksPerThread;
}

// Backward threads per row block (register path, H <= 8192): norm_backward_chunks_per_thread
// chunks per thread, rounded to a warp (at least 32 threads, one chunk each up to 32 chunks):
// H = 4096 -> 256 threads, 8192 -> 512; four chunks: 4096 -> 128, 8192 -> 256. Wider rows:
// row_threads(H) (the shared-memory path, whose shared size norm_backward_shared_bytes
// computes from row_threads).
inline int norm_backward_threads(int64_t hidden, bool four_chunks) {
  const int64_t chunks = norm_chunks(hidden);
  const int64_t per = norm_backward_chunks_per_thread(four_chunks);
  if (chunks <= kNormBackwardRegisterMaxChunks)
    return static_cast<int>(round_up_to_warps((chunks + per - 1) / per));
  return row_threads(hidden);
}

// ---- the ring kernels (rows streamed through shared memory by bulk copies) ------------------
// Which columns a thread owns and the order of every sum are the register kernels' (the
// threads above); the ring changes only where a row comes from and how many rows a block has in
// flight, so its results are bit-identical to the register kernels'. Its plan (stages, blocks
// per SM) depends on the rows' byte sizes and the SM count, never on the data: scheduling only.

constexpr int kRingMaxStages = 8;
// A stage is refilled one row after it was consumed (a row's data may be read until its last
// pass), so 3 stages are the least that keep a row in flight while one is reduced.
constexpr int kRingMinStages = 3;
// Hopper: 228 KB of shared memory per SM, of which a block uses its dynamic bytes, its static
// bytes (scratch and barriers, < 1 KB) and 1 KB reserved by the system.
constexpr int64_t kRingSharedPerSm = 228 * 1024;
constexpr int64_t kRingBlockOverhead = 2 * 1024;
constexpr int kRingMaxBlocksPerSm = 16;
// Streamed rows start on 128-byte boundaries of a stage (bulk copies need 16).
constexpr int64_t kRingRowAlign = 128;
// Launch bounds of the ring kernels: blocks of at most kMaxRowThreads = 512 threads, at least
// this many of them per SM, hence a register cap of 65536 / (512 x min blocks). With every
// branch of the row math resolved at compile time (norm_device.cuh's RingForm) and the row kept
// as raw 16-bit words, the forward fits 64 registers for up to four chunks a thread (H = 4096:
// 8 blocks of 128 threads per SM), and so does the backward without dbeta (RMS, L2); the
// LayerNorm backward keeps dgamma and dbeta column sums of two or four chunks in registers: 128.
constexpr int kRingForwardMinBlocks = 2;
constexpr int ring_backward_min_blocks(NormKind kind) { return kind == NormKind::Layer ? 1 : 2; }

// How a ring kernel lays out and launches: `stages` stages of `stage_bytes`, each receiving
// `bytes` (streamed row i, of row_bytes[i] bytes, at `offset[i]`); `blocks_per_sm` blocks per SM. stages == 0: the
// rows do not qualify (alignment, size) or do not fit; the register kernels run instead.
struct RingPlan {
  int stages = 0;
  int blocks_per_sm = 0;
  int64_t stage_bytes = 0;
  int64_t offset[3] = {0, 0, 0};
  uint32_t row_bytes[3] = {0, 0, 0};
  uint32_t bytes = 0;
  int64_t shared_bytes() const { return stages * stage_bytes; }
};

// A plan for streaming rows of row_bytes[i] bytes each (0: that tensor is absent) with
// blocks of `threads` threads, at most `threads_per_sm` resident per SM. Every row must be a
// bulk-copyable size (a multiple of 16 bytes); the caller checks the addresses.
inline RingPlan ring_plan(const int64_t (&row_bytes)[3], int threads, int threads_per_sm) {
  RingPlan plan;
  int64_t stage = 0;
  for (int i = 0; i < 3; ++i) {
    if (row_bytes[i] == 0) continue;
    if (row_bytes[i] % 16 != 0) return RingPlan{};
    plan.offset[i] = stage;
    plan.row_bytes[i] = static_cast<uint32_t>(row_bytes[i]);
    stage += (row_bytes[i] + kRingRowAlign - 1) / kRingRowAlign * kRingRowAlign;
    plan.bytes += static_cast<uint32_t>(row_bytes[i]);
  }
  if (stage == 0 || threads <= 0) return RingPlan{};
  int blocks = threads_per_sm / threads;
  if (blocks > kRingMaxBlocksPerSm) blocks = kRingMaxBlocksPerSm;
  // Fewer blocks with deeper rings rather than more blocks than the shared memory can feed.
  for (; blocks >= 1; --blocks) {
    int64_t per_block = kRingSharedPerSm / blocks - kRingBlockOverhead;
    if (per_block > kMaxDynamicSharedBytes) per_block = kMaxDynamicSharedBytes;
    int64_t stages = per_block / stage;
    if (stages > kRingMaxStages) stages = kRingMaxStages;
    if (stages >= kRingMinStages) {
      plan.stages = static_cast<int>(stages);
      plan.blocks_per_sm = blocks;
      plan.stage_bytes = stage;
      return plan;
    }
  }
  return RingPlan{};
}

}  // namespace switchyard::liger

#endif
