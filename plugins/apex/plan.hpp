// Which kernels a problem runs and how its rows are partitioned: functions of the problem
// alone (hidden size, dtypes, rows) — never of the GPU, the grid or the alignment of the
// tensors — so that a row's results and the order of every sum are fixed by the problem.
#ifndef SWITCHYARD_APEX_PLAN_HPP
#define SWITCHYARD_APEX_PLAN_HPP

#include "kernel_types.hpp"

#include <cstdint>

namespace switchyard::apex {

constexpr int kChunkElements = 8;  // a thread's unit of work: 8 consecutive columns (16 bytes
                                   // of a 16-bit row)

// A hidden size with compile-time kernels: `threads` threads share a row, each holding
// `chunks_per_thread` chunks of 8 columns in registers (thread t owns chunks t, t + threads,
// t + 2·threads, …, so a warp moves contiguous 512-byte runs). With 32 threads per row a
// block holds `rows_per_block` independent warps, one row each. `fused_backward`: the
// backward also keeps its dγ/dβ sums in registers (one read of x and dy); above 8192 they do
// not fit next to the row, and the backward is split (see BackwardPath).
struct FastShape {
  int64_t hidden;
  int threads;
  int chunks_per_thread;
  int rows_per_block;
  bool fused_backward;
};

constexpr FastShape kFastShapes[] = {
    {1024, 32, 4, 4, true},    {2048, 64, 4, 1, true},    {4096, 128, 4, 1, true},
    {5120, 128, 5, 1, true},   {8192, 256, 4, 1, true},   {12288, 384, 4, 1, false},
    {16384, 512, 4, 1, false}, {32768, 1024, 4, 1, false}};
constexpr int kFastShapeCount = static_cast<int>(sizeof kFastShapes / sizeof kFastShapes[0]);

// The fast shape of `hidden`, or nullptr.
inline const FastShape* fast_shape(int64_t hidden) {
  for (const FastShape& s : kFastShapes)
    if (s.hidden == hidden) return &s;
  return nullptr;
}

enum class ForwardPath { Fast, General };
// Fast: the row stays in registers (one read of x). General: any hidden size; the row is read
// twice (statistics, then y), the second time mostly from L1/L2.
inline ForwardPath forward_path(int64_t hidden, Dtype x, Dtype y) {
  return fast_shape(hidden) != nullptr && x == y ? ForwardPath::Fast : ForwardPath::General;
}

enum class BackwardPath { Fused, Split };
// Fused: one kernel reads x (or y) and dy once, writes dx and per-chunk dγ/dβ sums.
// Split (Apex's own structure): a dx kernel plus a column kernel for the per-chunk sums.
// Both then run the same final kernel over chunks.
inline BackwardPath backward_path(int64_t hidden, Dtype x, Dtype y) {
  const FastShape* s = fast_shape(hidden);
  return s != nullptr && s->fused_backward && x == y ? BackwardPath::Fused : BackwardPath::Split;
}

// Threads per row of the general kernels: about four chunks per thread, a multiple of 32,
// at most 1024. With 32 threads a block holds 4 rows.
inline int general_threads(int64_t hidden) {
  const int64_t chunks = (hidden + kChunkElements - 1) / kChunkElements;
  int64_t threads = (chunks + 3) / 4;
  threads = (threads + 31) / 32 * 32;
  if (threads < 32) threads = 32;
  if (threads > 1024) threads = 1024;
  return static_cast<int>(threads);
}
inline int general_rows_per_block(int threads) { return threads == 32 ? 4 : 1; }

// Columns per block of the column-sum kernel (Split path): 128 threads × 8 columns.
constexpr int kColumnThreads = 128;
// The final kernel sums a column's chunks in kFinalLanes interleaved runs, then the runs.
constexpr int kFinalLanes = 8;
constexpr int kFinalColumns = 32;

// Rows are cut into chunks of `rows_per_chunk` consecutive rows (the last may be shorter);
// dγ/dβ are summed over a chunk's rows in row order, then over chunks in chunk order. The
// number of chunks is at most partial_limit(hidden): up to 1024, enough to spread the backward
// over the GPU, and few enough that a region of fp32 partial sums stays within 8 MiB
// (2^21 floats; one chunk when a single row is larger).
inline int64_t partial_limit(int64_t hidden) {
  int64_t limit = (int64_t{1} << 21) / hidden;
  if (limit < 1) limit = 1;
  if (limit > 1024) limit = 1024;
  return limit;
}

struct RowPartition {
  int64_t rows_per_chunk = 1;
  int64_t chunks = 0;
};

inline RowPartition row_partition(int64_t rows, int64_t hidden) {
  RowPartition p;
  if (rows <= 0) return p;
  const int64_t limit = partial_limit(hidden);
  p.rows_per_chunk = (rows + limit - 1) / limit;
  p.chunks = (rows + p.rows_per_chunk - 1) / p.rows_per_chunk;
  return p;
}

constexpr int64_t kWorkspaceAlignment = 256;
inline int64_t align_up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Bytes of one [chunks, H] fp32 partial-sum region, padded to kWorkspaceAlignment.
inline int64_t partial_region_bytes(int64_t rows, int64_t hidden) {
  return align_up(row_partition(rows, hidden).chunks * hidden * 4, kWorkspaceAlignment);
}

// The workspace: dγ partials, then dβ partials (LayerNorm), plus kWorkspaceAlignment bytes so
// that any caller pointer can be aligned up. L2Norm and empty problems need none.
inline int64_t workspace_bytes(NormKind kind, int64_t rows, int64_t hidden) {
  if (kind == NormKind::L2 || rows <= 0) return 0;
  const int64_t regions = kind == NormKind::Layer ? 2 : 1;
  return kWorkspaceAlignment + regions * partial_region_bytes(rows, hidden);
}

}  // namespace switchyard::apex

#endif
