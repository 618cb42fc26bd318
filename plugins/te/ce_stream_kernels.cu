// te's streamed statistics kernel (README.md, "Cross entropy"): the plain forward without
// clusters. A block stays resident and takes rows blockIdx.x, + gridDim.x, ...; each row is
// read slice by slice and, inside a slice, group by group (a group: kCeSliceUnroll chunks of
// every thread, 4T chunks of 16 bytes), through a ring of shared-memory stages that bulk
// copies fill kCeStreamStages groups ahead, across slice and row boundaries. Nothing of a row
// is kept once it has been folded, so no block holds 64 KiB while it waits for the rest of
// its cluster, and no block pays a launch, a cluster barrier and a cold pipeline per slice.
//
// Same bits as the slice kernels (ce_slice.cuh): a slice's groups are folded by the same
// threads in the same order (fold_group), a slice's threads merged as block_merge merges them
// (warp_merge, then merge_warps in warp order), the slices in rank order (fold_slice), and the
// argmax found in the same group. One block barrier a row: thread 0 merges every slice's warps
// while the other warps go on with the next row. Which block runs a row
// changes nothing, so the grid may follow the device.
//
// Used for logits whose every row can be bulk-copied (16-byte aligned base and row stride);
// the slice kernel takes the others.
#include "ce_kernels.hpp"

#include "ce_device.cuh"
#include "ce_math.hpp"
#include "ce_plan.hpp"
#include "ce_slice.cuh"
#include "cuda_support.hpp"
#include "stage_ring.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace switchyard::te {
namespace {

// Thread 0's cursor over the groups of its block, in the order they are read: row, slice
// (rank), group; row = -1 past the block's last row (every slice of a real row has at least
// one group). Kept in shared memory: only thread 0 uses it, and registers are what limits
// the blocks per multiprocessor.
template <int VEC>
struct GroupCursor {
  int64_t row;
  SliceSpan span;
  int rank;
  int group;
  int groups;
  uint32_t filled;  // iterations armed so far

  __device__ void start(const CeKernelArgs& a, int group_chunks) {
    row = static_cast<int64_t>(blockIdx.x) < a.rows ? static_cast<int64_t>(blockIdx.x) : -1;
    rank = 0;
    group = 0;
    filled = 0;
    enter_slice(a, group_chunks);
  }

  __device__ void enter_slice(const CeKernelArgs& a, int group_chunks) {
    span = slice_span<VEC>(a, rank);
    groups = (span.chunks + group_chunks - 1) / group_chunks;
  }

  __device__ void advance(const CeKernelArgs& a, int group_chunks) {
    if (row < 0) return;
    if (++group < groups) return;
    group = 0;
    do {
      if (++rank == a.cluster) {
        rank = 0;
        row += gridDim.x;
        if (row >= a.rows) {
          row = -1;
          return;
        }
      }
      enter_slice(a, group_chunks);
    } while (groups == 0);
  }

  // Arms the next iteration with the bulk copy of this group's whole chunks (none past the
  // slice's columns; the last partial chunk and the padding are read by the threads), then
  // moves on.
  template <class Raw>
  __device__ void fill_next(const StageRing& ring, const CeKernelArgs& a, int group_chunks) {
    const int whole = span.elements / VEC;
    const int count = min(group_chunks, max(0, whole - group * group_chunks));
    const auto bytes = static_cast<uint32_t>(count) * 16u;
    uint64_t* bar = ring.arm(filled, bytes);
    if (count > 0) {
      const Raw* src = static_cast<const Raw*>(a.logits) + row * a.logits_stride +
                       (span.first + static_cast<int64_t>(group) * group_chunks) * VEC;
      cuda::bulk_load(ring.stage(filled), src, bytes, bar);
    }
    ++filled;
    advance(a, group_chunks);
  }
};

template <DType D, bool kArgmax, bool kSmoothing>
__global__ void __launch_bounds__(kCeSliceMaxThreads, kCeStreamBlocksPerSm)
    ce_stream_stats_kernel(CeKernelArgs a, uint32_t stages) {
  using raw = typename DT<D>::raw;
  constexpr int VEC = chunk_elements<D>();
  using Chunk = Pack<D, VEC>;
  extern __shared__ __align__(128) unsigned char ring_memory[];
  __shared__ uint64_t full[kCeStreamStages];
  __shared__ uint64_t empty[kCeStreamStages];
  // Per slice of the row, per warp: the warp's merged state (and the slice's target logit).
  // Two rows alternate, so the warps fill one while thread 0 reads the other.
  __shared__ CeState warp_states[2][kCeSliceMaxCluster][kCeSliceMaxThreads / 32];

  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  const int P = T * kCeSliceUnroll;  // chunks of a group
  const StageRing ring{ring_memory, full, empty, stages, static_cast<uint32_t>(P) * 16u};

  __shared__ GroupCursor<VEC> next;  // thread 0's
  if (tid == 0) {
    ring.init(static_cast<uint32_t>(T / 32));  // a warp releases a stage
    next.start(a, P);
  }
  __syncthreads();
  if (tid == 0)
    while (next.filled < stages && next.row >= 0) next.template fill_next<raw>(ring, a, P);

  const int warps = T / 32;
  uint32_t it = 0;
  int parity = 0;
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x, parity ^= 1) {
    const raw* z = static_cast<const raw*>(a.logits) + row * a.logits_stride;
    for (int rank = 0; rank < a.cluster; ++rank) {
      const SliceSpan span = slice_span<VEC>(a, rank);
      const raw* zs = z + span.first * VEC;
      const int whole = span.elements / VEC;
      CeRun run = ce_run_init();
      for (int c0 = 0, g = 0; c0 < span.chunks; c0 += P, ++g, ++it) {
        const auto* stage = reinterpret_cast<const uint4*>(ring.wait(it));
        // After a warp has its chunks: it releases the stage, and thread 0 re-arms the
        // previous group's stage (one group of slack: by then its slowest warp has most
        // likely released it, so warp 0 seldom waits and no warp waits for another's compute).
        const auto stage_read = [&] {
          __syncwarp();
          if ((tid & 31) == 0) ring.release(it);
          if (tid == 0 && it > 0 && next.row >= 0) {
            ring.wait_released(it - 1);
            next.template fill_next<raw>(ring, a, P);
          }
        };
        Chunk pk[kCeSliceUnroll];
        // Each path folds its own chunks: a shared fold after the branch would merge the two
        // paths' chunks as 16-bit values, unpacking and repacking every word.
        if (c0 + P <= whole) {  // every group of an aligned row but its last partial one
#pragma unroll
          for (int u = 0; u < kCeSliceUnroll; ++u) memcpy(&pk[u], &stage[u * T + tid], 16);
          stage_read();
          fold_group<D, kSmoothing>(run, pk, g, c0 + tid, T, span.elements);
        } else {
#pragma unroll
          for (int u = 0; u < kCeSliceUnroll; ++u) {
            const int i = c0 + u * T + tid;
            if (i < whole)
              memcpy(&pk[u], &stage[u * T + tid], 16);
            else
              load_chunk<Cache::Normal>(pk[u], zs, i, span.elements, false);
          }
          stage_read();
          fold_group<D, kSmoothing>(run, pk, g, c0 + tid, T, span.elements);
        }
      }
      CeState st{run.max, run.sum_exp, run.sum_logits, kNoArgmax};
      if (kArgmax && run.group >= 0) {
        // The group is read again (from L2, most likely) instead of being kept.
        const int c0 = run.group * P;
        Chunk pk[kCeSliceUnroll];
#pragma unroll
        for (int u = 0; u < kCeSliceUnroll; ++u)
          load_chunk<Cache::Normal>(pk[u], zs, c0 + u * T + tid, span.elements, true);
        st.argmax = span.first * VEC + group_argmax<D>(pk, run.max, c0 + tid, T);
      }
      // block_merge's first stage now; its second, for every slice, once the row is done:
      // one block barrier a row instead of one a slice.
      st = warp_merge(st);
      if ((tid & 31) == 0) warp_states[parity][rank][tid / 32] = st;
    }
    __syncthreads();
    if (tid == 0) {
      const RowLabel lab = row_label(a, row);
      SlicePartial rowp{};
      for (int rank = 0; rank < a.cluster; ++rank) {
        const SliceSpan span = slice_span<VEC>(a, rank);
        const CeState st = merge_warps(warp_states[parity][rank], warps);
        const int64_t at = lab.local_col - span.first * VEC;
        const float target = lab.local_col >= 0 && at >= 0 && at < span.elements
                                 ? DT<D>::to_float(z[lab.local_col])
                                 : 0.0f;
        fold_slice(rowp, SlicePartial{st.max, st.sum_exp, st.sum_logits, target, st.argmax}, rank);
      }
      const CeState rs{rowp.max, rowp.sum_exp, rowp.sum_logits, rowp.argmax};
      if (a.stats != nullptr)
        write_row_stats(a, row, rs, rowp.target);
      else
        (void)write_row_result(a, row, rs, rowp.target, lab);
    }
  }
}

size_t ring_bytes(int threads) {
  return static_cast<size_t>(kCeStreamStages) * static_cast<size_t>(threads) * kCeSliceUnroll * 16;
}

template <DType D, bool A, bool S>
void launch_stream(const CeKernelArgs& a, int threads, int device, void* stream) {
  const auto kernel = ce_stream_stats_kernel<D, A, S>;
  static std::atomic<uint64_t> raised{0};
  allow_all_shared(reinterpret_cast<const void*>(kernel), device, "ce_stream_stats_kernel", raised);
  const int64_t resident =
      int64_t{device_info(device).multiprocessors} *
      blocks_per_multiprocessor(reinterpret_cast<const void*>(kernel), threads, ring_bytes(threads), device);
  const int blocks = static_cast<int>(std::min<int64_t>(a.rows, resident));
  kernel<<<blocks, threads, ring_bytes(threads), static_cast<cudaStream_t>(stream)>>>(
      a, static_cast<uint32_t>(kCeStreamStages));
  check_cuda(cudaGetLastError(), "launch of ce_stream_stats_kernel");
}

template <DType D>
void stream_for(const CeKernelArgs& a, int threads, int device, void* stream) {
  const bool argmax = a.argmax != nullptr, smoothing = a.smoothing != 0;
  if (argmax && smoothing)
    launch_stream<D, true, true>(a, threads, device, stream);
  else if (argmax)
    launch_stream<D, true, false>(a, threads, device, stream);
  else if (smoothing)
    launch_stream<D, false, true>(a, threads, device, stream);
  else
    launch_stream<D, false, false>(a, threads, device, stream);
}

}  // namespace

bool ce_stream_stats_fits(const CeKernelArgs& a, DType logits) {
  const int64_t row_bytes = a.logits_stride * element_bytes(logits);
  return a.rows > 0 && a.cluster >= 1 && a.slice_chunks >= 1 &&
         (reinterpret_cast<uintptr_t>(a.logits) & 15u) == 0 && row_bytes % 16 == 0;
}

void launch_ce_stream_stats(const CeKernelArgs& a, DType logits, int threads, int device,
                            void* stream) {
  switch (logits) {
    case DType::BF16: stream_for<DType::BF16>(a, threads, device, stream); break;
    case DType::F16: stream_for<DType::F16>(a, threads, device, stream); break;
    default: stream_for<DType::F32>(a, threads, device, stream); break;
  }
}

}  // namespace switchyard::te
