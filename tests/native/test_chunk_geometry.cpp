// White-box test of the CUDA path's work division (plugins/native/cuda/chunk_geometry.hpp):
// plain arithmetic the kernels rely on, checked here on the CPU because the kernels
// themselves only run in the GPU suite. The loops below replay the kernels' index arithmetic
// and check that every element of a row is visited exactly once, by the thread the
// determinism argument says, and that the dgamma/dbeta finalize adds every partial row once,
// in order.
#include "chunk_geometry.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

using namespace switchyard::native::cuda;

TEST_CASE("chunks and padded rows") {
  CHECK(chunks_of(0) == 0);
  CHECK(chunks_of(1) == 1);
  CHECK(chunks_of(8) == 1);
  CHECK(chunks_of(9) == 2);
  CHECK(chunks_of(131072) == 16384);
  CHECK(padded_columns(1) == 8);
  CHECK(padded_columns(50257) == 50264);
  CHECK(padded_columns(131072) == 131072);
  for (int64_t n = 1; n < 100; ++n) {
    CAPTURE(n);
    CHECK(padded_columns(n) % kChunk == 0);
    CHECK(padded_columns(n) >= n);
    CHECK(padded_columns(n) - n < kChunk);
  }
}

TEST_CASE("element tiles visit every chunk of every row exactly once") {
  for (const auto& [rows, columns] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {3, 8}, {2, 9}, {5, 8191}, {2, 8192}, {2, 8193}, {1, 131072}, {4, 50257}}) {
    CAPTURE(rows);
    CAPTURE(columns);
    const TileSpace s = tile_space(rows, columns);
    CHECK(s.chunks == chunks_of(columns));
    std::vector<int> visits(static_cast<size_t>(rows * s.chunks), 0);
    // As SY_FOR_TILES + tile_of + the kElementUnroll loop, for a grid capped at 3 blocks.
    const int64_t grid = 3;
    for (int64_t block = 0; block < grid; ++block)
      for (int64_t tile = block; tile < s.tiles; tile += grid) {
        const int64_t row = tile / s.tiles_per_row;
        const int64_t first = (tile - row * s.tiles_per_row) * kTileChunks;
        REQUIRE(row < rows);
        for (int64_t thread = 0; thread < kElementThreads; ++thread)
          for (int u = 0; u < kElementUnroll; ++u) {
            const int64_t c = first + thread + u * kElementThreads;
            if (c < s.chunks) ++visits[static_cast<size_t>(row * s.chunks + c)];
          }
      }
    int64_t wrong = 0;
    for (const int v : visits) wrong += v != 1;
    CHECK(wrong == 0);
  }
}

TEST_CASE("norm row blocks: whole warps, at most kNormMaxThreads, cached chunks first") {
  int last = 0;
  for (const int64_t hidden : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{300}, int64_t{777},
                               int64_t{1000}, int64_t{1024}, int64_t{4096}, int64_t{8192},
                               int64_t{16384}, int64_t{20000}, int64_t{65536}}) {
    CAPTURE(hidden);
    const int threads = norm_row_threads(hidden);
    CHECK(threads % 32 == 0);
    CHECK(threads >= 32);
    CHECK(threads <= kNormMaxThreads);
    CHECK(threads >= last);  // wider rows never get fewer threads
    last = threads;
    // Rows up to kNormMaxThreads x kNormCachedChunks chunks stay in registers entirely.
    if (chunks_of(hidden) <= int64_t{kNormMaxThreads} * kNormCachedChunks)
      CHECK(int64_t{threads} * kNormCachedChunks >= chunks_of(hidden));
    // Thread t's chunks t, t + T, ...: every column once (cached loop, then the rest).
    std::vector<int> visits(static_cast<size_t>(hidden), 0);
    for (int t = 0; t < threads; ++t) {
      for (int k = 0; k < kNormCachedChunks; ++k) {
        const int64_t c = t + int64_t{k} * threads;
        for (int e = 0; e < kChunk && c < chunks_of(hidden); ++e)
          if (c * kChunk + e < hidden) ++visits[static_cast<size_t>(c * kChunk + e)];
      }
      for (int64_t c = t + int64_t{kNormCachedChunks} * threads; c < chunks_of(hidden);
           c += threads)
        for (int e = 0; e < kChunk; ++e)
          if (c * kChunk + e < hidden) ++visits[static_cast<size_t>(c * kChunk + e)];
    }
    int64_t wrong = 0;
    for (const int v : visits) wrong += v != 1;
    CHECK(wrong == 0);
  }
  // At the benchmark's sizes: four chunks a thread, four warps a row at H = 4096.
  CHECK(norm_row_threads(4096) == 128);
  CHECK(norm_row_threads(8192) == 256);
}

TEST_CASE("the finalize's groups cover the partial rows once, in order") {
  for (const int64_t rows : {int64_t{0}, int64_t{1}, int64_t{64}, int64_t{65}, int64_t{300},
                             int64_t{16384}, int64_t{70000}}) {
    CAPTURE(rows);
    const int64_t blocks = weight_partial_blocks(rows);
    CHECK(blocks == (rows + 63) / 64);
    int64_t next = 0;
    for (int g = 0; g < kFinalizeGroups; ++g) {
      const PartialRange r = finalize_range(blocks, g);
      CHECK(r.first == next);
      CHECK(r.last >= r.first);
      next = r.last;
    }
    CHECK(next == blocks);
  }
}

TEST_CASE("16-byte rows: the data and the row stride in bytes") {
  CHECK(rows_16_byte_aligned(0x1000, 8, 2));
  CHECK(rows_16_byte_aligned(0x1000, 4, 4));
  CHECK_FALSE(rows_16_byte_aligned(0x1008, 8, 2));   // data 8 bytes off
  CHECK_FALSE(rows_16_byte_aligned(0x1000, 50257, 2));  // odd row stride
  CHECK_FALSE(rows_16_byte_aligned(0x1000, 6, 4));   // 24-byte rows
  CHECK(rows_16_byte_aligned(0x1000, 131072, 2));
}
