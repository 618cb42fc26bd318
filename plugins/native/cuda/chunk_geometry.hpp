// How the native CUDA kernels cut rows into work, as plain arithmetic shared by the host side
// (g++: grid sizes, workspace layout) and the kernels (nvcc). No CUDA headers.
//
// Every kernel moves rows in CHUNKS of kChunk = 8 consecutive elements: one 16-byte access for
// 16-bit data, two for fp32, when the row starts on a 16-byte boundary (else element by element,
// in the same order, so the path never changes a result). Row reductions give thread t of a
// block the chunks t, t + T, t + 2T, ... of one row, summed in that order, then a fixed tree over
// the block: the order depends only on the row length (and T, itself a function of the row
// length), so results are bit-identical from run to run and do not depend on the batch.
#ifndef SWITCHYARD_NATIVE_CUDA_CHUNK_GEOMETRY_HPP
#define SWITCHYARD_NATIVE_CUDA_CHUNK_GEOMETRY_HPP

#include "kernel_types.hpp"

#include <cstdint>

namespace switchyard::native::cuda {

constexpr int kChunk = 8;  // elements per chunk

SY_NATIVE_HOST_DEVICE constexpr int64_t chunks_of(int64_t columns) {
  return (columns + kChunk - 1) / kChunk;
}

// Row length of the workspace copies (the fp32 logits, the dgamma/dbeta partials): whole
// chunks, so every workspace row starts 32-byte aligned and the last chunk is never cut.
SY_NATIVE_HOST_DEVICE constexpr int64_t padded_columns(int64_t columns) {
  return chunks_of(columns) * kChunk;
}

// ---- element-wise kernels (cross entropy): tiles of one row ---------------------------------

constexpr int kElementThreads = 256;
constexpr int kElementUnroll = 4;  // chunks per thread per tile, all loaded before any store
constexpr int64_t kTileChunks = int64_t{kElementThreads} * kElementUnroll;
constexpr int kElementBlocksPerSm = 4;  // register cap (64): 1024 threads and 64 KiB in flight per SM

// A [rows, columns] matrix as tiles of kTileChunks chunks, never across rows; one block per
// tile, blocks loop when the grid is capped.
struct TileSpace {
  int64_t rows = 0;
  int64_t columns = 0;
  int64_t chunks = 0;         // per row
  int64_t tiles_per_row = 0;
  int64_t tiles = 0;
};

SY_NATIVE_HOST_DEVICE constexpr TileSpace tile_space(int64_t rows, int64_t columns) {
  TileSpace s{};
  s.rows = rows;
  s.columns = columns;
  s.chunks = chunks_of(columns);
  s.tiles_per_row = (s.chunks + kTileChunks - 1) / kTileChunks;
  s.tiles = rows * s.tiles_per_row;
  return s;
}

// ---- row reductions (cross entropy: the row max and the row sums) --------------------------

constexpr int kRowThreads = 512;  // one block per row
constexpr int kRowUnroll = 4;     // chunks per thread loaded before they are reduced

// ---- norms: one block per row ---------------------------------------------------------------

constexpr int kNormCachedChunks = 4;  // chunks per thread kept in registers between passes
constexpr int kNormMaxThreads = 512;  // 128 registers a thread: room for the cached chunks

// Threads per block of the norm row kernels: enough for kNormCachedChunks chunks per thread,
// a whole number of warps, at most kNormMaxThreads (wider rows reload their last chunks). A
// function of the row length only: it fixes the reduction tree.
SY_NATIVE_HOST_DEVICE constexpr int norm_row_threads(int64_t hidden) {
  const int64_t per_thread = (chunks_of(hidden) + kNormCachedChunks - 1) / kNormCachedChunks;
  const int64_t warps = (per_thread + 31) / 32;
  const int64_t threads = (warps < 1 ? 1 : warps) * 32;
  return static_cast<int>(threads > kNormMaxThreads ? kNormMaxThreads : threads);
}

// dgamma/dbeta: partial sums over blocks of kRowsPerPartial rows (rows in order), then a
// finalize that adds the partials of a column in a fixed order.
constexpr int64_t kRowsPerPartial = 64;
constexpr int kPartialThreads = 128;  // one chunk of columns each: 1024 columns per block
constexpr int kFinalizeColumns = 32;  // a warp of adjacent columns...
constexpr int kFinalizeGroups = 8;    // ...times 8 groups of partial rows per block

SY_NATIVE_HOST_DEVICE constexpr int64_t weight_partial_blocks(int64_t rows) {
  return (rows + kRowsPerPartial - 1) / kRowsPerPartial;
}

// The partial rows group g of the finalize adds, in order: [first, last).
struct PartialRange {
  int64_t first = 0;
  int64_t last = 0;
};
SY_NATIVE_HOST_DEVICE constexpr PartialRange finalize_range(int64_t blocks, int group) {
  const int64_t per_group = (blocks + kFinalizeGroups - 1) / kFinalizeGroups;
  int64_t first = per_group * group;
  int64_t last = first + per_group;
  if (first > blocks) first = blocks;
  if (last > blocks) last = blocks;
  return PartialRange{first, last};
}

// ---- alignment --------------------------------------------------------------------------------

// Whether every row of a matrix starts on a 16-byte boundary (its data and its row stride in
// bytes), so whole chunks can move as 16-byte accesses.
SY_NATIVE_HOST_DEVICE constexpr bool rows_16_byte_aligned(uint64_t address, int64_t row_stride,
                                                           int64_t element_bytes) {
  return address % 16 == 0 && (row_stride * element_bytes) % 16 == 0;
}

}  // namespace switchyard::native::cuda

#endif
