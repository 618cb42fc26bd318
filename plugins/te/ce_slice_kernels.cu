// te's slice kernels (README.md, "Cross entropy"): a row is cut into `cluster` contiguous
// slices of at most 64 KiB, one block per slice; a block copies its slice into shared memory
// with bulk copies (the copy engine keeps the whole slice in flight, whatever the registers),
// and the blocks of a row form one thread-block cluster.
//
//   Stats  forward: each block's online-softmax state of its slice, exchanged through
//          distributed shared memory and merged in cluster-rank order; rank 0 writes lse,
//          loss, argmax (tp_size 1) or this rank's CeRowStats (tp_size > 1)
//   Fused  tp_size 1 grad in forward: Stats, then every block writes the gradient of its
//          slice from shared memory (one HBM read and one write of the row)
//   Grad   backward (and pass 2 of tp_size > 1 grad in forward): no cluster; each block
//          writes its slice's gradient as the pieces of the slice land
//
// Gradient (Fused and Grad): whole pieces of a vector-aligned grad row are written without a
// test per chunk (q = q_other everywhere; with smoothing off q_other = 0 and no subtraction is
// compiled), the rest chunk by chunk with guards; then the thread that wrote the label's chunk
// stores the label's element again with q_target. Every element has ce_grad_value's bits.
//
// Statistics order, fixed by (vocab_local, dtype) alone: in slice s, thread t folds its groups
// g = 0, 1, ... (chunks g 4T + u T + t, u = 0..3, the chunks past the slice -inf) with
// ce_math.hpp's ce_run_add (one max tree, one rescale, FFMA + ex2 per element, one add tree a
// group), the block's threads are merged by block_merge's tree, the slices in rank order
// 0, 1, ... . The argmax (a template flag, like smoothing) is the first element equal to the
// thread's max in the first group that reached it, read back from shared memory. Stats and Fused share
// the code, so grad in forward's lse/loss/argmax have the plain forward's bits. A row that is
// not 16-byte aligned is copied into shared memory by the threads instead of the copy engine:
// the same values in the same places, so the same bits.
//
// Waits: a piece's mbarrier is waited on only when a bulk copy was issued on it (by thread 0,
// before any thread can wait, with exactly the bytes it expects); every thread of a cluster
// executes the same two cluster barriers on every path (no early return in Stats/Fused).
#include "ce_kernels.hpp"

#include "ce_cluster.cuh"
#include "ce_device.cuh"
#include "ce_math.hpp"
#include "ce_plan.hpp"
#include "ce_slice.cuh"
#include "cuda_support.hpp"

#include <switchyard/cuda/bulk_copy.cuh>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <map>
#include <mutex>
#include <tuple>

namespace switchyard::te {
namespace {

enum class SliceMode { Stats, Fused, Grad };

// The row's statistics: the partials of ranks 0, 1, ..., C - 1 (read from each block's shared
// memory) folded in that order.
__device__ __forceinline__ SlicePartial merge_cluster(const SlicePartial& mine, int cluster) {
  if (cluster == 1) return mine;
  SlicePartial row{};
  for (int r = 0; r < cluster; ++r) {
    const auto rank = static_cast<uint32_t>(r);
    SlicePartial s;
    s.max = cluster_load_f32(cluster_address(&mine.max, rank));
    s.sum_exp = cluster_load_f32(cluster_address(&mine.sum_exp, rank));
    s.sum_logits = cluster_load_f32(cluster_address(&mine.sum_logits, rank));
    s.argmax = cluster_load_s64(cluster_address(&mine.argmax, rank));
    s.target = cluster_load_f32(cluster_address(&mine.target, rank));
    fold_slice(row, s, r);
  }
  return row;
}

// kArgmax: the argmax is asked for; kSmoothing: label smoothing (the sum of logits). Neither
// changes max, sum_exp or sum_logits, so every variant gives a row the same lse/loss bits.
template <DType D, DType G, SliceMode M, bool kArgmax, bool kSmoothing>
__global__ void __launch_bounds__(kCeSliceMaxThreads, kCeSliceBlocksPerSm)
    ce_slice_kernel(CeKernelArgs a) {
  using raw = typename DT<D>::raw;
  using graw = typename DT<G>::raw;
  constexpr int VEC = chunk_elements<D>();
  using Chunk = Pack<D, VEC>;
  extern __shared__ uint4 slice[];  // [slice_chunks] chunks of 16 bytes
  __shared__ uint64_t piece_done[kCeSlicePieces];
  __shared__ CeState scratch[32];
  __shared__ SlicePartial partial;
  __shared__ float shared_lse;

  const int cluster = a.cluster;
  const int rank = static_cast<int>(blockIdx.x % static_cast<unsigned>(cluster));
  const int64_t row = a.row_base + blockIdx.x / static_cast<unsigned>(cluster);
  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  const SliceSpan span = slice_span<VEC>(a, rank);
  const int64_t first = span.first;
  const int n = span.chunks;
  const int elements = span.elements;
  const int64_t col_first = first * VEC;
  const raw* z = static_cast<const raw*>(a.logits) + row * a.logits_stride;
  graw* out = M == SliceMode::Stats ? nullptr : static_cast<graw*>(a.grad) + row * a.grad_stride;
  const RowLabel lab = row_label(a, row);

  if constexpr (M == SliceMode::Grad) {
    if (lab.ignored) {  // uniform per block: nothing is copied, nothing waited on
      zero_grad_chunks<G, VEC>(out, first, n, a.vocab_local, aligned_to(out, pack_alignment<G, VEC>()));
      return;
    }
  }

  // Copy the slice in: whole chunks of an aligned row by the copy engine, piece p (chunks
  // [p * 4T, (p + 1) * 4T)) completing on piece_done[p]; the rest (an unaligned row, the
  // last partial chunk) by the threads, elements past the row as -inf.
  const bool bulk = aligned_to(z, 16);
  const int whole = bulk ? elements / VEC : 0;
  const int piece_chunks = T * kCeSliceUnroll;
  if (tid == 0) {
#pragma unroll
    for (int p = 0; p < kCeSlicePieces; ++p) cuda::mbarrier_init(&piece_done[p], 1);
    cuda::bulk_barrier_init_fence();
#pragma unroll
    for (int p = 0; p < kCeSlicePieces; ++p) {
      const int c0 = p * piece_chunks;
      const int count = min(piece_chunks, whole - c0);
      if (count > 0) {
        const auto bytes = static_cast<uint32_t>(count) * 16u;
        cuda::mbarrier_expect_bytes(&piece_done[p], bytes);
        cuda::bulk_load(&slice[c0], z + col_first + static_cast<int64_t>(c0) * VEC, bytes,
                        &piece_done[p]);
      }
    }
  }
  raw* staged = reinterpret_cast<raw*>(slice);
  // Stats/Fused read whole groups of 4T chunks; the chunks past the slice are -inf.
  const int filled = M == SliceMode::Grad ? n : (n + piece_chunks - 1) / piece_chunks * piece_chunks;
#pragma unroll 4
  for (int e = whole * VEC + tid; e < filled * VEC; e += T)
    staged[e] = e < elements ? z[col_first + e] : DT<D>::kNegInf;
  __syncthreads();  // the barriers are initialised, the threads' part of the slice is there

  if constexpr (M != SliceMode::Grad) {
    // Group g of this thread: chunks g * 4T + u * T + tid, u = 0..3 (the shared memory is
    // padded with -inf to whole groups, so no chunk is masked), folded by ce_run_add.
    CeRun run = ce_run_init();
    for (int c0 = 0, g = 0; c0 < n; c0 += piece_chunks, ++g) {
      if (c0 < whole) cuda::mbarrier_wait(&piece_done[g], 0);
      Chunk pk[kCeSliceUnroll];
#pragma unroll
      for (int u = 0; u < kCeSliceUnroll; ++u) memcpy(&pk[u], &slice[c0 + u * T + tid], 16);
      fold_group<D, kSmoothing>(run, pk, g, c0 + tid, T, elements);
    }
    CeState st{run.max, run.sum_exp, run.sum_logits, kNoArgmax};
    if (kArgmax && run.group >= 0) {
      // The lowest column of the max among this thread's chunks: the first element equal to
      // it in its first group that reached it (still in shared memory).
      const int c0 = run.group * piece_chunks;
      Chunk pk[kCeSliceUnroll];
#pragma unroll
      for (int u = 0; u < kCeSliceUnroll; ++u) memcpy(&pk[u], &slice[c0 + u * T + tid], 16);
      st.argmax = col_first + group_argmax<D>(pk, run.max, c0 + tid, T);
    }
    st = block_merge(st, scratch);
    if (tid == 0) {
      // Every piece has been waited on by this thread: the whole slice is visible to it.
      const int64_t at = lab.local_col - col_first;
      const float target =
          lab.local_col >= 0 && at >= 0 && at < elements ? DT<D>::to_float(staged[at]) : 0.0f;
      partial = SlicePartial{st.max, st.sum_exp, st.sum_logits, target, st.argmax};
    }
    if (cluster > 1) {  // every block's partial is written before any block reads it
      cluster_arrive();
      cluster_wait();
    }
    if (tid == 0) {
      const SlicePartial rowp = merge_cluster(partial, cluster);
      const CeState rs{rowp.max, rowp.sum_exp, rowp.sum_logits, rowp.argmax};
      if (M == SliceMode::Stats && a.stats != nullptr) {
        if (rank == 0) write_row_stats(a, row, rs, rowp.target);
      } else if (rank == 0) {
        shared_lse = write_row_result(a, row, rs, rowp.target, lab);
      } else {
        shared_lse = ce_finish(rs.max, rs.sum_exp, rs.sum_logits, rowp.target, lab.owned,
                               lab.ignored, a.scalars)
                         .lse;
      }
    }
    // This block has read the others' partials; they may leave once all have (the wait is
    // at the end, so the barrier completes while the gradient is written).
    if (cluster > 1) cluster_arrive();
    if constexpr (M == SliceMode::Stats) {
      if (cluster > 1) cluster_wait();
      return;
    }
    __syncthreads();  // shared_lse
  }

  // The gradient of the slice, from shared memory, over the logits or into its own buffer.
  const bool store_vector = aligned_to(out, pack_alignment<G, VEC>());
  if (M == SliceMode::Fused && lab.ignored) {
    zero_grad_chunks<G, VEC>(out, first, n, a.vocab_local, store_vector);
  } else {
    const float lse = M == SliceMode::Grad ? a.lse_in[row] : shared_lse;
    const GradRow r = grad_row(a, a.row_scale[row], lse, lab);
    // Whole pieces (every chunk of the piece inside the row, a grad row aligned for vector
    // stores; for bf16 V = 131072 all of them): per element one FFMA, one ex2, one FMUL, per
    // two elements one cvt, per chunk one shared load and one streaming vector store, and no
    // test per chunk. The label's element is written separately, below.
    const int fast = store_vector ? elements / VEC / piece_chunks * piece_chunks : 0;
    graw* const mine = out + (first + tid) * VEC;  // this thread's chunk of each group
    const int64_t step = int64_t{T} * VEC;          // from one of its chunks to the next
    for (int c0 = 0; c0 < fast; c0 += piece_chunks) {
      if (M == SliceMode::Grad && c0 < whole) cuda::mbarrier_wait(&piece_done[c0 / piece_chunks], 0);
      Chunk pk[kCeSliceUnroll];
#pragma unroll
      for (int u = 0; u < kCeSliceUnroll; ++u) memcpy(&pk[u], &slice[c0 + u * T + tid], 16);
      graw* const o = mine + int64_t{c0} * VEC;
#pragma unroll
      for (int u = 0; u < kCeSliceUnroll; ++u) {
        float v[VEC];
        unpack(pk[u], v);
        store_grad_whole<G, kSmoothing>(o + u * step, v, r);
      }
    }
    // The rest (the row's last piece when it is partial, or a grad row that is not aligned
    // for vectors): chunk by chunk, each tested against the slice and the row.
    GradRow rest = r;
    rest.target_col = -1;  // the label's element is written below in every case
    for (int c0 = fast; c0 < n; c0 += piece_chunks) {
      if (M == SliceMode::Grad && c0 < whole)
        cuda::mbarrier_wait(&piece_done[c0 / piece_chunks], 0);
      Chunk pk[kCeSliceUnroll];
#pragma unroll
      for (int u = 0; u < kCeSliceUnroll; ++u) {
        const int i = c0 + u * T + tid;
        if (i < n) memcpy(&pk[u], &slice[i], 16);
      }
#pragma unroll
      for (int u = 0; u < kCeSliceUnroll; ++u) {
        const int i = c0 + u * T + tid;
        if (i < n) {
          float v[VEC];
          unpack(pk[u], v);
          store_grad_chunk<G>(out, first + i, v, rest, a.vocab_local, store_vector);
        }
      }
    }
    // The label's element, by the thread that wrote its chunk (it has waited on the chunk's
    // piece, and its own earlier store to the address precedes this one): g (p - q_target).
    const int64_t at = lab.local_col - col_first;
    if (lab.local_col >= 0 && at >= 0 && at < elements && (at / VEC) % T == tid)
      store_grad_target<G>(out, lab.local_col, DT<D>::to_float(staged[at]), r);
  }
  if (M == SliceMode::Fused && cluster > 1) cluster_wait();
}

// ---- launch ---------------------------------------------------------------------------------

// The slice rounded up to whole groups of kCeSliceUnroll x threads chunks (<= 64 KiB, as
// threads x kCeSliceChunksPerThread >= slice_chunks and threads <= 256).
size_t slice_shared_bytes(const CeKernelArgs& a, int threads) {
  const int64_t group = int64_t{threads} * kCeSliceUnroll;
  return static_cast<size_t>((a.slice_chunks + group - 1) / group * group) * 16;
}

// Lets the kernel take its slice (up to 64 KiB of dynamic shared memory), once per device.
template <DType D, DType G, SliceMode M, bool A, bool S>
void allow_slice_shared(int device) {
  static std::atomic<uint64_t> raised{0};
  allow_all_shared(reinterpret_cast<const void*>(ce_slice_kernel<D, G, M, A, S>), device,
                   "ce_slice_kernel", raised);
}

cudaLaunchConfig_t slice_config(const CeKernelArgs& a, int64_t rows, int threads,
                                cudaLaunchAttribute* cluster, void* stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(rows * a.cluster));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = slice_shared_bytes(a, threads);
  config.stream = static_cast<cudaStream_t>(stream);
  if (cluster != nullptr) {
    cluster->id = cudaLaunchAttributeClusterDimension;
    cluster->val.clusterDim.x = static_cast<unsigned>(a.cluster);
    cluster->val.clusterDim.y = 1;
    cluster->val.clusterDim.z = 1;
    config.attrs = cluster;
    config.numAttrs = 1;
  }
  return config;
}

// Whether at least one cluster of the kernel fits the device (asked once per device and
// shape; a device partitioned by MPS or green contexts may not fit one).
template <DType D, DType G, SliceMode M, bool A, bool S>
bool cluster_fits(const CeKernelArgs& a, int threads, int device) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int, int>, bool> known;
  // One map per kernel variant (a static of this instantiation).
  const auto key = std::make_tuple(device, a.cluster, a.slice_chunks, threads);
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  allow_slice_shared<D, G, M, A, S>(device);
  cudaLaunchAttribute attribute{};
  cudaLaunchConfig_t config = slice_config(a, 1, threads, &attribute, nullptr);
  int clusters = 0;
  const cudaError_t error =
      cudaOccupancyMaxActiveClusters(&clusters, ce_slice_kernel<D, G, M, A, S>, &config);
  if (error != cudaSuccess) (void)cudaGetLastError();  // a refusal means: use the other kernels
  const bool fits = error == cudaSuccess && clusters > 0;
  known.emplace(key, fits);
  return fits;
}

// One launch per INT_MAX / cluster rows (a launch's grid is at most 2^31 - 1 blocks); a row's
// blocks never depend on which launch holds them.
template <DType D, DType G, SliceMode M, bool A, bool S>
void launch_slice(const CeKernelArgs& a, int threads, int device, void* stream) {
  allow_slice_shared<D, G, M, A, S>(device);
  const int64_t per_launch = INT_MAX / a.cluster;
  for (int64_t base = 0; base < a.rows; base += per_launch) {
    CeKernelArgs part = a;
    part.row_base = base;
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t config =
        slice_config(part, std::min(per_launch, a.rows - base), threads,
                     M == SliceMode::Grad ? nullptr : &attribute, stream);
    check_cuda(cudaLaunchKernelEx(&config, ce_slice_kernel<D, G, M, A, S>, part),
               "cudaLaunchKernelEx(ce_slice_kernel)");
  }
}

// The question does not depend on the argmax or smoothing flags (the lightest and the
// heaviest variants of both kernels must fit), so every call of a shape gets the same answer
// and so the same kernel for its statistics.
template <DType D, DType G>
bool available_for(const CeKernelArgs& a, int threads, int device) {
  return cluster_fits<D, D, SliceMode::Stats, false, false>(a, threads, device) &&
         cluster_fits<D, D, SliceMode::Stats, true, true>(a, threads, device) &&
         cluster_fits<D, G, SliceMode::Fused, false, false>(a, threads, device) &&
         cluster_fits<D, G, SliceMode::Fused, true, true>(a, threads, device);
}

template <DType D, DType G, SliceMode M>
void launch_variant(const CeKernelArgs& a, int threads, int device, void* stream) {
  const bool argmax = a.argmax != nullptr, smoothing = a.smoothing != 0;
  if (argmax && smoothing)
    launch_slice<D, G, M, true, true>(a, threads, device, stream);
  else if (argmax)
    launch_slice<D, G, M, true, false>(a, threads, device, stream);
  else if (smoothing)
    launch_slice<D, G, M, false, true>(a, threads, device, stream);
  else
    launch_slice<D, G, M, false, false>(a, threads, device, stream);
}

template <DType D>
void stats_for(const CeKernelArgs& a, int threads, int device, void* stream) {
  launch_variant<D, D, SliceMode::Stats>(a, threads, device, stream);
}

template <DType D, DType G>
void fused_for(const CeKernelArgs& a, int threads, int device, void* stream) {
  launch_variant<D, G, SliceMode::Fused>(a, threads, device, stream);
}

// The gradient does not need the argmax; smoothing is a flag so that without it (q = 0 off
// the label) an element costs no subtraction.
template <DType D, DType G>
void grad_for(const CeKernelArgs& a, int threads, int device, void* stream) {
  if (a.smoothing != 0)
    launch_slice<D, G, SliceMode::Grad, false, true>(a, threads, device, stream);
  else
    launch_slice<D, G, SliceMode::Grad, false, false>(a, threads, device, stream);
}

}  // namespace

#define TE_SLICE_DISPATCH(FN, ...)                                                 \
  switch (logits) {                                                                \
    case DType::BF16:                                                              \
      switch (grad) {                                                              \
        case DType::BF16: return FN<DType::BF16, DType::BF16>(__VA_ARGS__);        \
        case DType::F16: return FN<DType::BF16, DType::F16>(__VA_ARGS__);          \
        default: return FN<DType::BF16, DType::F32>(__VA_ARGS__);                  \
      }                                                                            \
    case DType::F16:                                                               \
      switch (grad) {                                                              \
        case DType::BF16: return FN<DType::F16, DType::BF16>(__VA_ARGS__);         \
        case DType::F16: return FN<DType::F16, DType::F16>(__VA_ARGS__);           \
        default: return FN<DType::F16, DType::F32>(__VA_ARGS__);                   \
      }                                                                            \
    default:                                                                       \
      switch (grad) {                                                              \
        case DType::BF16: return FN<DType::F32, DType::BF16>(__VA_ARGS__);         \
        case DType::F16: return FN<DType::F32, DType::F16>(__VA_ARGS__);           \
        default: return FN<DType::F32, DType::F32>(__VA_ARGS__);                   \
      }                                                                            \
  }

bool ce_slices_available(const CeKernelArgs& a, DType logits, DType grad, int threads,
                         int device) {
  if (a.cluster < 1 || a.slice_chunks < 1) return false;
  TE_SLICE_DISPATCH(available_for, a, threads, device)
}

void launch_ce_slice_stats(const CeKernelArgs& a, DType logits, int threads, int device,
                           void* stream) {
  if (ce_stream_stats_fits(a, logits)) return launch_ce_stream_stats(a, logits, threads, device, stream);
  switch (logits) {
    case DType::BF16: stats_for<DType::BF16>(a, threads, device, stream); break;
    case DType::F16: stats_for<DType::F16>(a, threads, device, stream); break;
    default: stats_for<DType::F32>(a, threads, device, stream); break;
  }
}

void launch_ce_slice_fused(const CeKernelArgs& a, DType logits, DType grad, int threads,
                           int device, void* stream) {
  TE_SLICE_DISPATCH(fused_for, a, threads, device, stream)
}

void launch_ce_slice_grad(const CeKernelArgs& a, DType logits, DType grad, int threads,
                          int device, void* stream) {
  TE_SLICE_DISPATCH(grad_for, a, threads, device, stream)
}

#undef TE_SLICE_DISPATCH

}  // namespace switchyard::te
