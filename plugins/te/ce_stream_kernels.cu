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
// argmax found in the same group. One block barrier a row, then warp 0 merges the row while
// the other warps go on with the next: lane r merges slice r's warps and lane 0 folds the
// lanes' slices in rank order. The slices' merges do not depend on each other, so they run
// side by side rather than one after another on thread 0; warp 0 is back sooner to release
// its ring stages, which every warp's next group waits for. Which block runs a row changes
// nothing, so the grid may follow the device.
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

// Where iteration j of a block reads: the block's rows are blockIdx.x, + gridDim.x, ...; a row
// is `per_row` groups, slice after slice (every slice but the last has `per_slice` groups).
// A function of j alone, so whichever warp frees a stage can arm its next iteration.
template <int VEC>
struct GroupMap {
  int group_chunks;
  int per_slice;
  int per_row;
  int64_t iterations;  // of this block

  __device__ GroupMap(const CeKernelArgs& a, int chunks_per_group) : group_chunks(chunks_per_group) {
    per_slice = (a.slice_chunks + group_chunks - 1) / group_chunks;
    const int last = (slice_span<VEC>(a, a.cluster - 1).chunks + group_chunks - 1) / group_chunks;
    per_row = (a.cluster - 1) * per_slice + last;
    const int64_t rows = a.rows > blockIdx.x ? (a.rows - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    iterations = rows * per_row;
  }

  // Arms iteration j with the bulk copy of its group's whole chunks (none past the slice's
  // columns; the last partial chunk and the padding are read by the threads).
  template <class Raw>
  __device__ void fill(const StageRing& ring, const CeKernelArgs& a, uint32_t j) const {
    const int64_t row = blockIdx.x + static_cast<int64_t>(j / per_row) * gridDim.x;
    const int in_row = static_cast<int>(j % per_row);
    const int rank = min(in_row / per_slice, a.cluster - 1);
    const int group = in_row - rank * per_slice;
    const SliceSpan span = slice_span<VEC>(a, rank);
    const int whole = span.elements / VEC;
    const int count = min(group_chunks, max(0, whole - group * group_chunks));
    const auto bytes = static_cast<uint32_t>(count) * 16u;
    const StagePosition at = ring.position(j);
    uint64_t* bar = ring.arm(at, bytes);
    if (count > 0) {
      const Raw* src = static_cast<const Raw*>(a.logits) + row * a.logits_stride +
                       (span.first + static_cast<int64_t>(group) * group_chunks) * VEC;
      cuda::bulk_load(ring.stage(at), src, bytes, bar);
    }
  }
};

// A warp has its chunks of iteration `it`: it releases the stage, and the last warp to do so
// arms it with the iteration `stages` ahead. No warp waits for another's compute.
template <class Raw, int VEC>
__device__ __forceinline__ void release_stage(const StageRing& ring, const GroupMap<VEC>& map,
                                              const CeKernelArgs& a, uint32_t it, int warps) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0 && ring.release(ring.position(it), static_cast<uint32_t>(warps)) &&
      it + ring.stages < map.iterations)
    map.template fill<Raw>(ring, a, it + ring.stages);
}

// Lane `src`'s partial, in every lane of the warp (all 32 lanes must call it).
__device__ __forceinline__ SlicePartial shfl_partial(const SlicePartial& p, int src) {
  SlicePartial o;
  o.max = __shfl_sync(kFullMask, p.max, src);
  o.sum_exp = __shfl_sync(kFullMask, p.sum_exp, src);
  o.sum_logits = __shfl_sync(kFullMask, p.sum_logits, src);
  o.target = __shfl_sync(kFullMask, p.target, src);
  o.argmax =
      static_cast<int64_t>(__shfl_sync(kFullMask, static_cast<long long>(p.argmax), src));
  return o;
}

template <DType D, bool kArgmax, bool kSmoothing>
__global__ void __launch_bounds__(kCeSliceMaxThreads, kCeStreamBlocksPerSm)
    ce_stream_stats_kernel(CeKernelArgs a) {
  using raw = typename DT<D>::raw;
  constexpr int VEC = chunk_elements<D>();
  using Chunk = Pack<D, VEC>;
  extern __shared__ __align__(128) unsigned char ring_memory[];
  __shared__ uint64_t full[kCeStreamStages];
  __shared__ uint32_t released[kCeStreamStages];
  // Per slice of the row, per warp: the warp's merged state. Two rows alternate, so the warps
  // fill one while warp 0 reads the other.
  __shared__ CeState warp_states[2][kCeSliceMaxCluster][kCeSliceMaxThreads / 32];

  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  const int warps = T / 32;
  const int P = T * kCeSliceUnroll;  // chunks of a group
  // A compile-time stage count: the stage and phase of an iteration cost a multiply.
  constexpr uint32_t stages = kCeStreamStages;
  const StageRing ring{ring_memory, full, released, stages, static_cast<uint32_t>(P) * 16u};
  const GroupMap<VEC> map(a, P);

  if (tid == 0) ring.init();
  __syncthreads();
  if (tid == 0)
    for (uint32_t j = 0; j < stages && j < map.iterations; ++j) map.template fill<raw>(ring, a, j);

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
        const auto* stage = reinterpret_cast<const uint4*>(ring.wait(ring.position(it)));
        Chunk pk[kCeSliceUnroll];
        // Each path folds its own chunks: a shared fold after the branch would merge the two
        // paths' chunks as 16-bit values, unpacking and repacking every word.
        if (c0 + P <= whole) {  // every group of an aligned row but its last partial one
#pragma unroll
          for (int u = 0; u < kCeSliceUnroll; ++u) memcpy(&pk[u], &stage[u * T + tid], 16);
          release_stage<raw>(ring, map, a, it, warps);
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
          release_stage<raw>(ring, map, a, it, warps);
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
    // Warp 0 merges the row. The warp's index comes through a shuffle so that the compiler
    // sees a warp-uniform branch: under a plain `tid < 32`, nvcc 13 guards the shuffles below
    // against a diverged warp and the BF16 and F16 kernels spill.
    if (__shfl_sync(kFullMask, tid / 32, 0) == 0) {
      const int lane = tid;
      RowLabel lab{};
      if (lane == 0) lab = row_label(a, row);
      const auto label_col = static_cast<int64_t>(
          __shfl_sync(kFullMask, static_cast<long long>(lab.local_col), 0));
      // Lane r's slice r; only the slice holding the label has a nonzero target.
      static_assert(kCeSliceMaxCluster <= 32, "one lane of warp 0 per slice");
      SlicePartial mine{};
      if (lane < a.cluster) {
        const SliceSpan span = slice_span<VEC>(a, lane);
        const CeState st = merge_warps(warp_states[parity][lane], warps);
        const int64_t at = label_col - span.first * VEC;
        const float target =
            label_col >= 0 && at >= 0 && at < span.elements ? DT<D>::to_float(z[label_col]) : 0.0f;
        mine = SlicePartial{st.max, st.sum_exp, st.sum_logits, target, st.argmax};
      }
      // Every lane folds the same partials in rank order (no divergence between the shuffles);
      // lane 0's row is the one written.
      SlicePartial rowp{};
      for (int rank = 0; rank < a.cluster; ++rank)
        fold_slice(rowp, shfl_partial(mine, rank), rank);
      if (lane == 0) {
        const CeState rs{rowp.max, rowp.sum_exp, rowp.sum_logits, rowp.argmax};
        if (a.stats != nullptr)
          write_row_stats(a, row, rs, rowp.target);
        else
          (void)write_row_result(a, row, rs, rowp.target, lab);
      }
    }
  }
}

size_t ring_bytes(int threads) {
  return static_cast<size_t>(kCeStreamStages) * static_cast<size_t>(threads) * kCeSliceUnroll * 16;
}

// Resident blocks of a streamed kernel on `device` (its shared-memory limit raised first),
// at most `rows`: the grid.
int stream_grid(const void* kernel, const char* name, std::atomic<uint64_t>& raised,
                const CeKernelArgs& a, int threads, int device) {
  allow_all_shared(kernel, device, name, raised);
  const int64_t resident = int64_t{device_info(device).multiprocessors} *
                           blocks_per_multiprocessor(kernel, threads, ring_bytes(threads), device);
  return static_cast<int>(std::min<int64_t>(a.rows, resident));
}

template <DType D, bool A, bool S>
void launch_stats(const CeKernelArgs& a, int threads, int device, void* stream) {
  const auto kernel = ce_stream_stats_kernel<D, A, S>;
  static std::atomic<uint64_t> raised{0};
  const int blocks = stream_grid(reinterpret_cast<const void*>(kernel), "ce_stream_stats_kernel",
                                 raised, a, threads, device);
  kernel<<<blocks, threads, ring_bytes(threads), static_cast<cudaStream_t>(stream)>>>(a);
  check_cuda(cudaGetLastError(), "launch of ce_stream_stats_kernel");
}

template <DType D>
void stats_for(const CeKernelArgs& a, int threads, int device, void* stream) {
  const bool argmax = a.argmax != nullptr, smoothing = a.smoothing != 0;
  if (argmax && smoothing)
    launch_stats<D, true, true>(a, threads, device, stream);
  else if (argmax)
    launch_stats<D, true, false>(a, threads, device, stream);
  else if (smoothing)
    launch_stats<D, false, true>(a, threads, device, stream);
  else
    launch_stats<D, false, false>(a, threads, device, stream);
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
    case DType::BF16: stats_for<DType::BF16>(a, threads, device, stream); break;
    case DType::F16: stats_for<DType::F16>(a, threads, device, stream); break;
    default: stats_for<DType::F32>(a, threads, device, stream); break;
  }
}

}  // namespace switchyard::te
