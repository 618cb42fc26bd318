// The apex kernels: the per-thread work of row_math.hpp, joined by cross-thread reductions in
// a fixed order, and their launchers. Included by the per-dtype translation units
// (kernels_<dtype>.cu), each of which instantiates what its x dtype needs.
//
// Reduction order (fixed, so every row's statistics are bit-reproducible and independent of
// the batch): within a warp, a butterfly over lane masks 1, 2, 4, 8, 16 in which the lower lane
// of each pair is always the left operand (Welford merges are not symmetric), leaving the same
// bits in every lane; across the warps of a row, warp 0, 1, 2, … in order, computed by every
// thread from shared memory. tests/apex emulates the same order on the CPU.
#ifndef SWITCHYARD_APEX_KERNELS_CUH
#define SWITCHYARD_APEX_KERNELS_CUH

#include "kernel_types.hpp"
#include "plan.hpp"
#include "row_math.hpp"
#include "welford.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace switchyard::apex {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kMaxWarps = 32;

// ---- reductions over the threads of one row -------------------------------------------------

__device__ __forceinline__ WelfordStats warp_welford(WelfordStats s) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int mask = 1; mask < 32; mask <<= 1) {
    WelfordStats other;
    other.count = __shfl_xor_sync(kFullMask, s.count, mask);
    other.mean = __shfl_xor_sync(kFullMask, s.mean, mask);
    other.m2 = __shfl_xor_sync(kFullMask, s.m2, mask);
    s = (lane & mask) != 0 ? welford_merge(other, s) : welford_merge(s, other);
  }
  return s;
}

__device__ __forceinline__ float2 warp_sum2(float2 s) {
#pragma unroll
  for (int mask = 1; mask < 32; mask <<= 1) {
    // a + b == b + a exactly, so both lanes of a pair get the same bits.
    s.x += __shfl_xor_sync(kFullMask, s.x, mask);
    s.y += __shfl_xor_sync(kFullMask, s.y, mask);
  }
  return s;
}

// The row's statistics in every thread of the row group (threadIdx.x = 0 … 32·warps − 1).
// With more than one warp every thread of the block must call it (it has a __syncthreads);
// `slots` alternate between calls so that one barrier per row suffices.
__device__ __forceinline__ WelfordStats row_welford(WelfordStats s, int warps,
                                                    WelfordStats (*slots)[kMaxWarps],
                                                    int& parity) {
  s = warp_welford(s);
  if (warps == 1) return s;
  WelfordStats* slot = slots[parity];
  parity ^= 1;
  if ((threadIdx.x & 31) == 0) slot[threadIdx.x >> 5] = s;
  __syncthreads();
  WelfordStats r = slot[0];
  for (int w = 1; w < warps; ++w) r = welford_merge(r, slot[w]);
  return r;
}

__device__ __forceinline__ float2 row_sum2(float2 s, int warps, float2 (*slots)[kMaxWarps],
                                           int& parity) {
  s = warp_sum2(s);
  if (warps == 1) return s;
  float2* slot = slots[parity];
  parity ^= 1;
  if ((threadIdx.x & 31) == 0) slot[threadIdx.x >> 5] = s;
  __syncthreads();
  float2 r = slot[0];
  for (int w = 1; w < warps; ++w) {
    r.x += slot[w].x;
    r.y += slot[w].y;
  }
  return r;
}

// ---- forward --------------------------------------------------------------------------------

// Writes mean/rstd of a row (thread 0 of its row group) and returns them.
__device__ __forceinline__ RowStatistics finish_statistics(const ForwardParams& p, int64_t row,
                                                           const WelfordStats& welford,
                                                           float sum_squares) {
  const RowStatistics stats = row_statistics(p.kind, welford, sum_squares, p.hidden, p.eps);
  if (threadIdx.x == 0) {
    if (p.kind == NormKind::Layer) p.mean[row] = stats.mean;
    p.rstd[row] = stats.rstd;
  }
  return stats;
}

// Persistent: block b handles rows b·ROWS + y, then + gridDim.x·ROWS, …
template <class T, int THREADS, int CPT, int ROWS>
__global__ void __launch_bounds__(THREADS* ROWS) forward_fast_kernel(const ForwardParams p) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps per row");
  static_assert(ROWS == 1 || THREADS == 32, "several rows per block only with a warp per row");
  constexpr int kWarps = THREADS / 32;
  __shared__ WelfordStats welford_slots[2][kMaxWarps];
  __shared__ float2 sum_slots[2][kMaxWarps];
  int parity = 0;
  const int t = threadIdx.x;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * ROWS + threadIdx.y; row < p.rows;
       row += static_cast<int64_t>(gridDim.x) * ROWS) {
    ForwardFastThread<T, CPT> thread;
    thread.load(p, row, t, THREADS);
    WelfordStats welford = welford_empty();
    float sum_squares = 0.0f;
    if (p.kind == NormKind::Layer) {
      welford = row_welford(thread.welford(), kWarps, welford_slots, parity);
    } else {
      sum_squares = row_sum2(make_float2(thread.sum_squares(), 0.0f), kWarps, sum_slots, parity).x;
    }
    const RowStatistics stats = finish_statistics(p, row, welford, sum_squares);
    thread.store(p, row, t, THREADS, stats.mean, stats.rstd);
  }
}

// blockDim = (threads, rows per block) chosen by general_threads(); any hidden size.
template <class Tx, class Ty>
__global__ void __launch_bounds__(1024) forward_general_kernel(const ForwardParams p) {
  __shared__ WelfordStats welford_slots[2][kMaxWarps];
  __shared__ float2 sum_slots[2][kMaxWarps];
  int parity = 0;
  const int t = threadIdx.x;
  const int threads = blockDim.x;
  const int warps = threads / 32;
  using Thread = ForwardGeneralThread<Tx, Ty>;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < p.rows;
       row += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    WelfordStats welford = welford_empty();
    float sum_squares = 0.0f;
    if (p.kind == NormKind::Layer) {
      welford = row_welford(Thread::welford(p, row, t, threads), warps, welford_slots, parity);
    } else {
      sum_squares =
          row_sum2(make_float2(Thread::sum_squares(p, row, t, threads), 0.0f), warps, sum_slots,
                   parity)
              .x;
    }
    const RowStatistics stats = finish_statistics(p, row, welford, sum_squares);
    Thread::store(p, row, t, threads, stats.mean, stats.rstd);
  }
}

// ---- backward -------------------------------------------------------------------------------

// Persistent over row chunks: each chunk (p.rows_per_chunk consecutive rows) is handled by one
// row group from start to end, so its dγ/dβ sums are in row order whatever the grid.
template <class T, int THREADS, int CPT, int ROWS, bool LAYER>
__global__ void __launch_bounds__(THREADS* ROWS) backward_fused_kernel(const BackwardParams p) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps per row");
  static_assert(ROWS == 1 || THREADS == 32, "several rows per block only with a warp per row");
  constexpr int kWarps = THREADS / 32;
  __shared__ float2 sum_slots[2][kMaxWarps];
  int parity = 0;
  const int t = threadIdx.x;
  for (int64_t chunk = static_cast<int64_t>(blockIdx.x) * ROWS + threadIdx.y; chunk < p.chunks;
       chunk += static_cast<int64_t>(gridDim.x) * ROWS) {
    BackwardFusedThread<T, CPT, LAYER> thread;
    thread.clear();
    const int64_t begin = chunk * p.rows_per_chunk;
    const int64_t end = min64(p.rows, begin + p.rows_per_chunk);
    for (int64_t row = begin; row < end; ++row) {
      thread.load(p, row, t, THREADS);
      const float mean = backward_mean(p, row);
      const float rstd = p.rstd[row];
      float2 sums;
      thread.accumulate(p, t, THREADS, mean, rstd, sums.x, sums.y);
      sums = row_sum2(sums, kWarps, sum_slots, parity);
      const DxCoefficients k = dx_coefficients(p.kind, sums.x, sums.y, p.hidden);
      thread.store_dx(p, row, t, THREADS, mean, rstd, k.centre, k.slope);
    }
    thread.write_partials(p, chunk, t, THREADS);
  }
}

template <class Tx, class Ty, class Tin>
__global__ void __launch_bounds__(1024) backward_dx_kernel(const BackwardParams p) {
  __shared__ float2 sum_slots[2][kMaxWarps];
  int parity = 0;
  const int t = threadIdx.x;
  const int threads = blockDim.x;
  const int warps = threads / 32;
  using Thread = BackwardGeneralThread<Tx, Ty, Tin>;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; row < p.rows;
       row += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const float mean = backward_mean(p, row);
    const float rstd = p.rstd[row];
    float2 sums;
    Thread::sums(p, row, t, threads, mean, rstd, sums.x, sums.y);
    sums = row_sum2(sums, warps, sum_slots, parity);
    const DxCoefficients k = dx_coefficients(p.kind, sums.x, sums.y, p.hidden);
    Thread::store_dx(p, row, t, threads, mean, rstd, k.centre, k.slope);
  }
}

// Work item w = (row chunk w / tiles, column tile w % tiles); a tile is kColumnThreads chunks
// of 8 columns. No barriers: threads past the last column just skip.
template <class Ty, class Tin>
__global__ void __launch_bounds__(kColumnThreads) column_partials_kernel(const BackwardParams p) {
  const int64_t column_chunks = chunk_count(p.hidden);
  const int64_t tiles = (column_chunks + kColumnThreads - 1) / kColumnThreads;
  const int64_t items = tiles * p.chunks;
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    const int64_t c = (w % tiles) * kColumnThreads + threadIdx.x;
    if (c < column_chunks) column_partial<Ty, Tin>(p, w / tiles, c);
  }
}

// ---- launching ------------------------------------------------------------------------------

// Blocks of `kernel` that fit one SM at `block_threads` threads, asked once per block size.
template <auto Kernel>
int blocks_per_sm(int block_threads) {
  static std::atomic<int> cached[kMaxWarps + 1];
  const int slot = std::min(block_threads / 32, kMaxWarps);
  int blocks = cached[slot].load(std::memory_order_relaxed);
  if (blocks == 0) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, block_threads, 0) !=
            cudaSuccess ||
        blocks < 1) {
      cudaGetLastError();  // the launch itself will report what is wrong
      blocks = 1;
    }
    cached[slot].store(blocks, std::memory_order_relaxed);
  }
  return blocks;
}

// A persistent launch: as many blocks as there are work units, at most what fits the SMs
// the caller leaves us. The grid never changes a result, only how fast it comes.
template <auto Kernel, class Params>
cudaError_t launch_persistent(dim3 block, int64_t work_units, const LaunchConfig& config,
                              const Params& params) {
  if (work_units <= 0) return cudaSuccess;
  const int threads = static_cast<int>(block.x * block.y);
  const int64_t sms = std::max(1, config.sm_count - config.sm_margin);
  const int64_t grid = std::max<int64_t>(
      1, std::min<int64_t>(work_units, sms * blocks_per_sm<Kernel>(threads)));
  Kernel<<<static_cast<unsigned>(grid), block, 0, static_cast<cudaStream_t>(config.stream)>>>(
      params);
  return cudaGetLastError();
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <class Tx, class Ty>
cudaError_t launch_forward_general(const ForwardParams& p, const LaunchConfig& config) {
  const int threads = general_threads(p.hidden);
  const int rows = general_rows_per_block(threads);
  return launch_persistent<forward_general_kernel<Tx, Ty>>(dim3(threads, rows),
                                                           ceil_div(p.rows, rows), config, p);
}

template <class T, int I = 0>
cudaError_t launch_forward_fast(const ForwardParams& p, const LaunchConfig& config) {
  if constexpr (I < kFastShapeCount) {
    constexpr FastShape s = kFastShapes[I];
    if (s.hidden != p.hidden) return launch_forward_fast<T, I + 1>(p, config);
    return launch_persistent<
        forward_fast_kernel<T, s.threads, s.chunks_per_thread, s.rows_per_block>>(
        dim3(s.threads, s.rows_per_block), ceil_div(p.rows, s.rows_per_block), config, p);
  } else {
    return cudaErrorInvalidValue;  // forward_path() chose Fast for a hidden size not listed
  }
}

// Forward for x dtype Tx; y is Tx or float (checked by the host).
template <class Tx>
cudaError_t launch_forward_for(const ForwardParams& p, const LaunchConfig& config) {
  if (p.rows == 0) return cudaSuccess;
  if (forward_path(p.hidden, p.x_dtype, p.y_dtype) == ForwardPath::Fast)
    return launch_forward_fast<Tx>(p, config);
  if (p.y_dtype == p.x_dtype) return launch_forward_general<Tx, Tx>(p, config);
  return launch_forward_general<Tx, float>(p, config);
}

template <class T, int I = 0>
cudaError_t launch_backward_fused(const BackwardParams& p, const LaunchConfig& config) {
  if constexpr (I < kFastShapeCount) {
    constexpr FastShape s = kFastShapes[I];
    if constexpr (!s.fused_backward) {
      return launch_backward_fused<T, I + 1>(p, config);
    } else {
      if (s.hidden != p.hidden) return launch_backward_fused<T, I + 1>(p, config);
      const dim3 block(s.threads, s.rows_per_block);
      const int64_t work = ceil_div(p.chunks, s.rows_per_block);
      if (p.kind == NormKind::Layer)
        return launch_persistent<
            backward_fused_kernel<T, s.threads, s.chunks_per_thread, s.rows_per_block, true>>(
            block, work, config, p);
      return launch_persistent<
          backward_fused_kernel<T, s.threads, s.chunks_per_thread, s.rows_per_block, false>>(
          block, work, config, p);
    }
  } else {
    return cudaErrorInvalidValue;  // backward_path() chose Fused for a hidden size not listed
  }
}

template <class Tx, class Ty, class Tin>
cudaError_t launch_backward_split(const BackwardParams& p, const LaunchConfig& config) {
  // The column sums read dy and x_or_y before the dx kernel may overwrite them (dx may alias
  // either).
  if (p.partial_gamma != nullptr || p.partial_beta != nullptr) {
    const int64_t tiles = ceil_div(chunk_count(p.hidden), kColumnThreads);
    const cudaError_t error = launch_persistent<column_partials_kernel<Ty, Tin>>(
        dim3(kColumnThreads), tiles * p.chunks, config, p);
    if (error != cudaSuccess) return error;
  }
  const int threads = general_threads(p.hidden);
  const int rows = general_rows_per_block(threads);
  return launch_persistent<backward_dx_kernel<Tx, Ty, Tin>>(dim3(threads, rows),
                                                            ceil_div(p.rows, rows), config, p);
}

// dx and the per-chunk partial sums for x dtype Tx (dy is Tx or float, x_or_y is Tx, or y's
// dtype in memory-efficient mode). The final sums are launched by the caller.
template <class Tx>
cudaError_t launch_backward_rows_for(const BackwardParams& p, const LaunchConfig& config) {
  if (p.rows == 0) return cudaSuccess;
  if (backward_path(p.hidden, p.x_dtype, p.y_dtype) == BackwardPath::Fused)
    return launch_backward_fused<Tx>(p, config);
  if (p.y_dtype == p.x_dtype) return launch_backward_split<Tx, Tx, Tx>(p, config);
  if (p.memory_efficient) return launch_backward_split<Tx, float, float>(p, config);
  return launch_backward_split<Tx, float, Tx>(p, config);
}

}  // namespace switchyard::apex

#endif
