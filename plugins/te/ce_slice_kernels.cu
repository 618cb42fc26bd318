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
// Persistent Fused (ce_fused_persistent_kernel): Fused for logits whose rows can all be
// bulk-copied and a grad aligned for vector stores. One cluster a row leaves a block's shared
// memory idle between the block's exit and the next block's first copies; here a grid of
// resident clusters takes rows (cluster k of K: row k, then the rows it claims from a counter
// in the workspace; block rank r always on slice r), and while a block writes a row's gradient
// piece by piece it refills each piece, once every thread is done reading it, with the same
// piece of the cluster's next row: the next row's loads overlap this row's stores. Both Fused
// kernels call the same fold, merge and gradient functions (below), so a row has the same bits
// whichever runs it, and whatever K is.
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
// thread's max in the first group that reached it, read back from shared memory. Stats and
// Fused share the code, so grad in forward's lse/loss/argmax have the plain forward's bits. A
// row that is not 16-byte aligned is copied into shared memory by the threads instead of the
// copy engine: the same values in the same places, so the same bits.
//
// Waits: a piece's mbarrier is waited on only when a bulk copy was issued on it (by thread 0,
// before any thread can wait, with exactly the bytes it expects; in the persistent kernel,
// phase i of the barrier is the block's row i); every thread of a cluster executes the same
// cluster barriers on every path (no early return in Stats/Fused).
#include "ce_kernels.hpp"

#include "ce_cluster.cuh"
#include "ce_device.cuh"
#include "ce_math.hpp"
#include "ce_plan.hpp"
#include "ce_slice.cuh"
#include "cuda_support.hpp"
#include "row_claims.hpp"

#include <switchyard/cuda/bulk_copy.cuh>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

namespace switchyard::te {
namespace {

enum class SliceMode { Stats, Fused, Grad };

// Launch bounds: Stats and Fused blocks of up to 256 threads, 3 a multiprocessor (64 KiB of
// slice each); Grad blocks are always the plan's 32 threads (its 4 KiB slices), 32 a
// multiprocessor, the hardware's limit, so at most 64 registers: with the Stats/Fused bounds
// ptxas gave Grad 72-79 and only 25-28 blocks fitted.
template <SliceMode M>
constexpr int kSliceBlockThreads = M == SliceMode::Grad ? 32 : kCeSliceMaxThreads;
template <SliceMode M>
constexpr int kSliceBlocksPerSm = M == SliceMode::Grad ? 32 : kCeSliceBlocksPerSm;

// ---- what the slice kernel and the persistent Fused kernel share -----------------------------
// Written once, so that a row's statistics and gradient have the same bits whichever kernel ran.

// Thread 0: arms piece p's barrier with the bytes of the piece's whole chunks (those below
// `whole`) and bulk-copies them from the slice's first logit `zs`. A piece without whole
// chunks is neither armed nor waited on, in any row.
template <int VEC, class Raw>
__device__ __forceinline__ void load_piece(uint4* slice, uint64_t* piece_done, int p,
                                           int piece_chunks, int whole, const Raw* zs) {
  const int c0 = p * piece_chunks;
  const int count = min(piece_chunks, whole - c0);
  if (count > 0) {
    const auto bytes = static_cast<uint32_t>(count) * 16u;
    cuda::mbarrier_expect_bytes(&piece_done[p], bytes);
    cuda::bulk_load(&slice[c0], zs + static_cast<int64_t>(c0) * VEC, bytes, &piece_done[p]);
  }
}

// Thread 0, before the block's first __syncthreads (which publishes the barriers): initialises
// the pieces' barriers and bulk-copies the slice's whole chunks (none when `whole` is 0).
template <int VEC, class Raw>
__device__ __forceinline__ void start_slice(uint4* slice, uint64_t* piece_done, int piece_chunks,
                                            int whole, const Raw* zs) {
#pragma unroll
  for (int p = 0; p < kCeSlicePieces; ++p) cuda::mbarrier_init(&piece_done[p], 1);
  cuda::bulk_barrier_init_fence();
#pragma unroll
  for (int p = 0; p < kCeSlicePieces; ++p)
    load_piece<VEC>(slice, piece_done, p, piece_chunks, whole, zs);
}

// The threads' part of the slice: chunks [from, to) (the copy engine takes those below
// `whole`), elements past the slice's columns as -inf. The caller makes them visible with a
// __syncthreads.
template <DType D>
__device__ __forceinline__ void fill_slice(uint4* slice, const typename DT<D>::raw* zs, int from,
                                           int to, int elements) {
  constexpr int VEC = chunk_elements<D>();
  auto* staged = reinterpret_cast<typename DT<D>::raw*>(slice);
  const int T = static_cast<int>(blockDim.x);
#pragma unroll 4
  for (int e = from * VEC + static_cast<int>(threadIdx.x); e < to * VEC; e += T)
    staged[e] = e < elements ? zs[e] : DT<D>::kNegInf;
}

// publish_partial's default: thread 0 publishes the partial only.
struct NothingMore {
  __device__ void operator()() const {}
};

// The block's partial of its slice, written into `partial` by thread 0, then the cluster
// barrier after which every block's partial of the row can be read (through distributed shared
// memory). Thread t folds its groups g = 0, 1, ... (chunks g 4T + u T + t, u = 0..3; the
// shared memory is padded with -inf to whole groups, so no chunk is masked) as each
// bulk-copied piece lands (phase `parity` of its barrier), then block_merge. With kArgmax, the
// lowest column of the thread's max: the first element equal to it in its first group that
// reached it (still in shared memory). Thread 0 has waited on every piece and the threads'
// chunks were published by a __syncthreads, so it reads the label's logit, when the label is
// in this slice, from shared memory too. Thread 0 calls also_publish() after writing the
// partial: what it writes to this block's shared memory there is released with the partial.
template <DType D, bool kArgmax, bool kSmoothing, class AlsoPublish = NothingMore>
__device__ __forceinline__ void publish_partial(SlicePartial& partial, const uint4* slice,
                                                uint64_t* piece_done, uint32_t parity,
                                                const SliceSpan& span, int whole,
                                                const RowLabel& lab, int cluster,
                                                CeState* scratch,
                                                AlsoPublish also_publish = {}) {
  constexpr int VEC = chunk_elements<D>();
  using Chunk = Pack<D, VEC>;
  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  const int piece_chunks = T * kCeSliceUnroll;
  CeRun run = ce_run_init();
  for (int c0 = 0, g = 0; c0 < span.chunks; c0 += piece_chunks, ++g) {
    if (c0 < whole) cuda::mbarrier_wait(&piece_done[g], parity);
    Chunk pk[kCeSliceUnroll];
#pragma unroll
    for (int u = 0; u < kCeSliceUnroll; ++u) memcpy(&pk[u], &slice[c0 + u * T + tid], 16);
    fold_group<D, kSmoothing>(run, pk, g, c0 + tid, T, span.elements);
  }
  CeState st{run.max, run.sum_exp, run.sum_logits, kNoArgmax};
  if (kArgmax && run.group >= 0) {
    const int c0 = run.group * piece_chunks;
    Chunk pk[kCeSliceUnroll];
#pragma unroll
    for (int u = 0; u < kCeSliceUnroll; ++u) memcpy(&pk[u], &slice[c0 + u * T + tid], 16);
    st.argmax = span.first * VEC + group_argmax<D>(pk, run.max, c0 + tid, T);
  }
  st = block_merge(st, scratch);
  if (tid == 0) {
    const auto* staged = reinterpret_cast<const typename DT<D>::raw*>(slice);
    const int64_t at = lab.local_col - span.first * VEC;
    const float target =
        lab.local_col >= 0 && at >= 0 && at < span.elements ? DT<D>::to_float(staged[at]) : 0.0f;
    partial = SlicePartial{st.max, st.sum_exp, st.sum_logits, target, st.argmax};
    also_publish();
    if (cluster > 1) release_shared_to_cluster();
  }
  // Relaxed: only thread 0's partial is to be seen, and a release arrive would hold every thread
  // until its earlier global stores (the previous row's gradient, in the persistent kernel)
  // were performed: 10 % of the persistent kernel's stall samples in Nsight Compute, though
  // other blocks hid most of it (grad in forward 0.3067 -> 0.3055 ms).
  if (cluster > 1) {
    cluster_arrive_relaxed();
    cluster_wait();
  }
}

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

// Thread 0, tp_size 1: the row's lse from its merged statistics; rank 0 also writes lse,
// loss and argmax.
__device__ __forceinline__ float row_lse(const CeKernelArgs& a, int64_t row, int rank,
                                         const SlicePartial& rowp, const RowLabel& lab) {
  const CeState rs{rowp.max, rowp.sum_exp, rowp.sum_logits, rowp.argmax};
  if (rank == 0) return write_row_result(a, row, rs, rowp.target, lab);
  return ce_finish(rs.max, rs.sum_exp, rs.sum_logits, rowp.target, lab.owned, lab.ignored,
                   a.scalars)
      .lse;
}

// The gradient of the piece at chunk c0 of the slice, a whole piece (every chunk inside the
// row) of a grad row aligned for vector stores (bf16 V = 131072: all of them): per element one
// FFMA, one ex2, one FMUL, per two elements one cvt, per chunk one shared load and one
// streaming vector store, and no test per chunk. The label's element is written separately
// (grad_label).
template <DType D, DType G, bool kSmoothing>
__device__ __forceinline__ void grad_piece_whole(const uint4* slice, int c0,
                                                 typename DT<G>::raw* mine, const GradRow& r) {
  constexpr int VEC = chunk_elements<D>();
  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  Pack<D, VEC> pk[kCeSliceUnroll];
#pragma unroll
  for (int u = 0; u < kCeSliceUnroll; ++u) memcpy(&pk[u], &slice[c0 + u * T + tid], 16);
  typename DT<G>::raw* const o = mine + int64_t{c0} * VEC;
  const int64_t step = int64_t{T} * VEC;  // from one of the thread's chunks to the next
#pragma unroll
  for (int u = 0; u < kCeSliceUnroll; ++u) {
    float v[VEC];
    unpack(pk[u], v);
    store_grad_whole<G, kSmoothing>(o + u * step, v, r);
  }
}

// The gradient of the piece at chunk c0 when it is not whole (the row's last partial piece)
// or the grad row is not aligned for vectors: chunk by chunk, each tested against the slice
// and the row. `rest` is the row's GradRow with target_col -1 (no per-element test: the
// label's element is written separately, by grad_label).
template <DType D, DType G>
__device__ __forceinline__ void grad_piece_rest(const uint4* slice, int c0,
                                                typename DT<G>::raw* out, const SliceSpan& span,
                                                const GradRow& rest, int64_t columns,
                                                bool store_vector) {
  constexpr int VEC = chunk_elements<D>();
  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  Pack<D, VEC> pk[kCeSliceUnroll];
#pragma unroll
  for (int u = 0; u < kCeSliceUnroll; ++u) {
    const int i = c0 + u * T + tid;
    if (i < span.chunks) memcpy(&pk[u], &slice[i], 16);
  }
#pragma unroll
  for (int u = 0; u < kCeSliceUnroll; ++u) {
    const int i = c0 + u * T + tid;
    if (i < span.chunks) {
      float v[VEC];
      unpack(pk[u], v);
      store_grad_chunk<G>(out, span.first + i, v, rest, columns, store_vector);
    }
  }
}

// The label's element, g (p - q_target), when it lies in columns [from, to) of the slice: by
// the thread that wrote its chunk (it has waited on the chunk's piece, and its own earlier
// store to the address precedes this one), from the logit still in shared memory.
template <DType D, DType G>
__device__ __forceinline__ void grad_label(typename DT<G>::raw* out, const uint4* slice,
                                           const RowLabel& lab, const SliceSpan& span, int from,
                                           int to, const GradRow& r) {
  constexpr int VEC = chunk_elements<D>();
  const auto* staged = reinterpret_cast<const typename DT<D>::raw*>(slice);
  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t at = lab.local_col - span.first * VEC;
  if (lab.local_col >= 0 && at >= from && at < to && (at / VEC) % T == tid)
    store_grad_target<G>(out, lab.local_col, DT<D>::to_float(staged[at]), r);
}

// Chunks of the slice's pieces written without a test per chunk (grad_piece_whole): the whole
// pieces, when the grad row is aligned for vector stores.
__device__ __forceinline__ int whole_piece_chunks(const SliceSpan& span, int vec,
                                                  int piece_chunks, bool store_vector) {
  return store_vector ? span.elements / vec / piece_chunks * piece_chunks : 0;
}

// ---- one cluster a row ----------------------------------------------------------------------

// kArgmax: the argmax is asked for; kSmoothing: label smoothing (the sum of logits). Neither
// changes max, sum_exp or sum_logits, so every variant gives a row the same lse/loss bits.
template <DType D, DType G, SliceMode M, bool kArgmax, bool kSmoothing>
__global__ void __launch_bounds__(kSliceBlockThreads<M>, kSliceBlocksPerSm<M>)
    ce_slice_kernel(CeKernelArgs a) {
  using raw = typename DT<D>::raw;
  using graw = typename DT<G>::raw;
  constexpr int VEC = chunk_elements<D>();
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
  const int n = span.chunks;
  const raw* z = static_cast<const raw*>(a.logits) + row * a.logits_stride;
  graw* out = M == SliceMode::Stats ? nullptr : static_cast<graw*>(a.grad) + row * a.grad_stride;
  const RowLabel lab = row_label(a, row);

  if constexpr (M == SliceMode::Grad) {
    if (lab.ignored) {  // uniform per block: nothing is copied, nothing waited on
      zero_grad_chunks<G, VEC>(out, span.first, n, a.vocab_local,
                               aligned_to(out, pack_alignment<G, VEC>()));
      return;
    }
  }

  // Copy the slice in: whole chunks of an aligned row by the copy engine, piece p (chunks
  // [p * 4T, (p + 1) * 4T)) completing on piece_done[p]; the rest (an unaligned row, the
  // last partial chunk) by the threads, elements past the row as -inf.
  const bool bulk = aligned_to(z, 16);
  const int whole = bulk ? span.elements / VEC : 0;
  const raw* zs = z + span.first * VEC;
  const int piece_chunks = T * kCeSliceUnroll;
  if (tid == 0) start_slice<VEC>(slice, piece_done, piece_chunks, whole, zs);
  // Stats/Fused read whole groups of 4T chunks; the chunks past the slice are -inf.
  const int filled =
      M == SliceMode::Grad ? n : (n + piece_chunks - 1) / piece_chunks * piece_chunks;
  fill_slice<D>(slice, zs, whole, filled, span.elements);
  __syncthreads();  // the barriers are initialised, the threads' part of the slice is there

  if constexpr (M != SliceMode::Grad) {
    publish_partial<D, kArgmax, kSmoothing>(partial, slice, piece_done, 0, span, whole, lab,
                                            cluster, scratch);
    if (tid == 0) {
      const SlicePartial rowp = merge_cluster(partial, cluster);
      if (M == SliceMode::Stats && a.stats != nullptr) {
        const CeState rs{rowp.max, rowp.sum_exp, rowp.sum_logits, rowp.argmax};
        if (rank == 0) write_row_stats(a, row, rs, rowp.target);
      } else {
        shared_lse = row_lse(a, row, rank, rowp, lab);
      }
    }
    // This block has read the others' partials; they may leave once all have (the wait is
    // at the end, so the barrier completes while the gradient is written).
    if (cluster > 1) cluster_arrive_relaxed();  // nothing to release: the reads are done
    if constexpr (M == SliceMode::Stats) {
      if (cluster > 1) cluster_wait();
      return;
    }
    __syncthreads();  // shared_lse
  }

  // The gradient of the slice, from shared memory, over the logits or into its own buffer.
  const bool store_vector = aligned_to(out, pack_alignment<G, VEC>());
  if (M == SliceMode::Fused && lab.ignored) {
    zero_grad_chunks<G, VEC>(out, span.first, n, a.vocab_local, store_vector);
  } else {
    const float lse = M == SliceMode::Grad ? a.lse_in[row] : shared_lse;
    const GradRow r = grad_row(a, a.row_scale[row], lse, lab);
    const int fast = whole_piece_chunks(span, VEC, piece_chunks, store_vector);
    graw* const mine = out + (span.first + tid) * VEC;  // this thread's chunk of each group
    for (int c0 = 0; c0 < fast; c0 += piece_chunks) {
      if (M == SliceMode::Grad && c0 < whole)
        cuda::mbarrier_wait(&piece_done[c0 / piece_chunks], 0);
      grad_piece_whole<D, G, kSmoothing>(slice, c0, mine, r);
    }
    GradRow rest = r;
    rest.target_col = -1;
    for (int c0 = fast; c0 < n; c0 += piece_chunks) {
      if (M == SliceMode::Grad && c0 < whole)
        cuda::mbarrier_wait(&piece_done[c0 / piece_chunks], 0);
      grad_piece_rest<D, G>(slice, c0, out, span, rest, a.vocab_local, store_vector);
    }
    grad_label<D, G>(out, slice, lab, span, 0, span.elements, r);
  }
  if (M == SliceMode::Fused && cluster > 1) cluster_wait();
}

// ---- persistent Fused: resident clusters, each block refilling its slice row after row --------

// tp_size 1 grad in forward, for logits whose every row can be bulk-copied and a grad aligned
// for vector stores (ce_slice_fused_persistent_fits). A grid of resident clusters (K of them):
// cluster k takes row k first, then the rows it claims, K + 0, K + 1, ..., in the order the
// clusters ask (a row counter in the workspace, a.row_claims: row_claims.hpp); its block of
// rank r always takes slice r. Claimed, not dealt round-robin (rows k, k + K, ...): clusters do
// not run at one pace (their blocks share multiprocessors with one or two others), and with rows
// dealt in turn the slowest cluster's rows set the kernel's time. Same lease, bf16 [2048, 131072]: grad in forward 0.3061 ->
// 0.2883 ms (eleventh session).
// Each row is Fused's: the same publish_partial, merge_cluster, row_lse and gradient functions
// as ce_slice_kernel, so the same bits, whichever cluster runs the row and whatever K is. What
// differs is that the shared memory never waits for a new block: while a block writes the
// gradient of row i piece by piece, it refills each piece, as soon as every thread is done
// reading it, with the same piece of the cluster's next row, so the next row's loads overlap
// this row's stores.
//
// Per row i of the block (i = 0, 1, ...):
//   claim  rank 0's thread 0 takes the cluster's next row from the counter (atomicAdd, which
//          ptxas aggregates over the warp, so warp 0 waits for it here, as it would for the
//          row's first piece: an unaggregated atom.inc measured the same)
//   fold   wait on each piece's barrier in phase i (parity i & 1), fold, block_merge
//   merge  thread 0 writes its partial into partial[i & 1] (rank 0: the claimed row into
//          next_row[i & 1]); one cluster barrier (every partial of row i written; every block
//          done reading row i - 1's); thread 0 reads the cluster's partials and rank 0's next
//          row, rank 0 writes lse/loss/argmax; __syncthreads (shared_lse, shared_next)
//   grad   per piece p: the gradient (or zeros for an ignored row) and the label's element,
//          both from shared memory; __syncthreads (every thread done reading piece p); thread
//          0: fence.proxy.async, then arms piece p's barrier for phase i + 1 and bulk-copies
//          piece p of the next row into it
//   tail   the row's last partial chunk, if any, is not bulk-copied: the threads copy the next
//          row's once the last piece's readers are done, then a __syncthreads
// A piece's barrier completes exactly one phase per row: its copy is issued for every row,
// ignored rows included (their lse is written, so their logits are folded like any other
// row's), and a piece without whole chunks is never armed nor waited on. A thread waits on
// phase i + 1 only after the __syncthreads that precedes its arming, so no thread can be two
// phases behind. The gradient may be written over the logits: a block writes only its slice
// of its current row, which every read of it (the bulk copies and the threads' chunks) has
// already brought into shared memory, and the refills read the cluster's next row, which only
// this cluster touches (each row is claimed once), and which it writes only after reading it.
template <DType D, DType G, bool kArgmax, bool kSmoothing>
__global__ void __launch_bounds__(kCeSliceMaxThreads, kCeSliceBlocksPerSm)
    ce_fused_persistent_kernel(CeKernelArgs a) {
  using raw = typename DT<D>::raw;
  using graw = typename DT<G>::raw;
  constexpr int VEC = chunk_elements<D>();
  extern __shared__ uint4 slice[];  // [slice_chunks] chunks of 16 bytes, refilled every row
  // Double-buffered by row parity: thread 0 writes partial[i & 1] of row i + 2 only after
  // passing row i + 1's cluster barrier, which every block reaches only after it has read
  // the cluster's row i partials (merge_cluster), so no block reads a partial being replaced.
  // The arrive is relaxed, but those reads have returned before it: their values made
  // shared_lse, which the block's __syncthreads waited for.
  __shared__ SlicePartial partial[2];
  __shared__ uint64_t piece_done[kCeSlicePieces];  // phase i: the block's row i has landed
  __shared__ CeState scratch[32];
  __shared__ float shared_lse;
  // The cluster's next row, claimed by rank 0 and read by every block after the row's cluster
  // barrier: double-buffered by row parity, as the partials are.
  __shared__ int64_t next_row[2];
  __shared__ int64_t shared_next;

  // The cluster's own coordinates: the rank is the one distributed shared memory addresses.
  const int cluster = a.cluster;
  const int rank = static_cast<int>(__clusterRelativeBlockRank());
  const int clusters = static_cast<int>(__clusterGridDimInClusters().x);
  const int tid = static_cast<int>(threadIdx.x);
  const int piece_chunks = static_cast<int>(blockDim.x) * kCeSliceUnroll;
  const SliceSpan span = slice_span<VEC>(a, rank);
  const int n = span.chunks;
  const int whole = span.elements / VEC;  // every row is bulk-copied (the launcher's test)
  const raw* const logits = static_cast<const raw*>(a.logits) + span.first * VEC;
  int64_t row = __clusterIdx().x;

  if (tid == 0)
    start_slice<VEC>(slice, piece_done, piece_chunks, row < a.rows ? whole : 0,
                     logits + row * a.logits_stride);
  // The padding to whole groups (-inf) stays for every row: only chunks [whole, n) are copied
  // by the threads again for each row.
  if (row < a.rows)
    fill_slice<D>(slice, logits + row * a.logits_stride, whole,
                  (n + piece_chunks - 1) / piece_chunks * piece_chunks, span.elements);
  __syncthreads();  // the barriers are initialised, the threads' part of row 0 is there
  // The counter is zeroed by the kernel ahead of this one (launch_zero_row_claims), which this
  // one may overlap: only the thread that claims rows waits for it.
  if (rank == 0 && tid == 0) wait_for_previous_grid();

  // The row's label and gradient scale, loaded a row ahead: the next row's are issued once it
  // is known, before this row's gradient is written, and used at its start. Loaded at the
  // row's start instead, their wait held 7 % of the kernel's stall samples (Nsight Compute).
  int64_t label = row < a.rows ? label_of_row(a, row) : 0;
  float g = row < a.rows ? a.row_scale[row] : 0.0f;
  for (uint32_t i = 0; row < a.rows; ++i) {
    const RowLabel lab = row_label_of(a, label);

    // Past its cluster barrier, row i's partials are written and row i - 1's have been read.
    SlicePartial& mine = partial[i & 1u];
    // Claimed before the fold, published with the partial.
    const int64_t claimed =
        rank == 0 && tid == 0 ? clusters + static_cast<int64_t>(atomicAdd(a.row_claims, 1ull)) : 0;
    publish_partial<D, kArgmax, kSmoothing>(mine, slice, piece_done, i & 1u, span, whole, lab,
                                            cluster, scratch, [&] {
                                              if (rank == 0) next_row[i & 1u] = claimed;
                                            });
    if (tid == 0) {
      shared_lse = row_lse(a, row, rank, merge_cluster(mine, cluster), lab);
      shared_next = cluster > 1 ? cluster_load_s64(cluster_address(&next_row[i & 1u], 0))
                                : next_row[i & 1u];
    }
    __syncthreads();  // shared_lse, shared_next

    const int64_t next = shared_next;
    const bool has_next = next < a.rows;
    graw* const out = static_cast<graw*>(a.grad) + row * a.grad_stride;
    const bool store_vector = aligned_to(out, pack_alignment<G, VEC>());
    const GradRow r = grad_row(a, g, shared_lse, lab);
    if (has_next) {
      label = label_of_row(a, next);
      g = a.row_scale[next];
    }
    GradRow rest = r;
    rest.target_col = -1;
    const int fast = whole_piece_chunks(span, VEC, piece_chunks, store_vector);
    graw* const first_chunk = out + (span.first + tid) * VEC;  // this thread's chunk of group 0
    for (int c0 = 0, p = 0; c0 < n; c0 += piece_chunks, ++p) {
      if (lab.ignored) {  // uniform per block; the row's logits were folded all the same
        zero_grad_chunks<G, VEC>(out, span.first + c0, min(piece_chunks, n - c0), a.vocab_local,
                                 store_vector);
      } else {
        if (c0 < fast)
          grad_piece_whole<D, G, kSmoothing>(slice, c0, first_chunk, r);
        else
          grad_piece_rest<D, G>(slice, c0, out, span, rest, a.vocab_local, store_vector);
        // Before the piece is refilled: the label's logit is read from it.
        grad_label<D, G>(out, slice, lab, span, c0 * VEC,
                         min((c0 + piece_chunks) * VEC, span.elements), r);
      }
      // Every thread is done reading piece p (generic loads); the fence orders those reads
      // before the copy engine's writes into the same bytes.
      __syncthreads();
      if (tid == 0 && has_next && c0 < whole) {
        cuda::bulk_reuse_fence();
        load_piece<VEC>(slice, piece_done, p, piece_chunks, whole, logits + next * a.logits_stride);
      }
    }
    if (has_next && whole < n) {  // the last chunk is partial: its readers are done (above)
      fill_slice<D>(slice, logits + next * a.logits_stride, whole, n, span.elements);
      __syncthreads();
    }
    row = next;
  }
  // No block leaves while another may still read its partials (its shared memory).
  if (cluster > 1) {
    cluster_arrive_relaxed();
    cluster_wait();
  }
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

// `attributes`: room for two (the cluster's shape, and with `balanced` the scheduling policy
// that lets the hardware place a cluster's blocks where they fit), or NULL for no cluster.
cudaLaunchConfig_t slice_config(const CeKernelArgs& a, int64_t rows, int threads,
                                cudaLaunchAttribute* attributes, void* stream,
                                bool balanced = false) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(rows * a.cluster));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = slice_shared_bytes(a, threads);
  config.stream = static_cast<cudaStream_t>(stream);
  if (attributes != nullptr) {
    attributes[0].id = cudaLaunchAttributeClusterDimension;
    attributes[0].val.clusterDim.x = static_cast<unsigned>(a.cluster);
    attributes[0].val.clusterDim.y = 1;
    attributes[0].val.clusterDim.z = 1;
    config.attrs = attributes;
    config.numAttrs = 1;
    if (balanced) {
      attributes[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
      attributes[1].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicyLoadBalancing;
      config.numAttrs = 2;
    }
  }
  return config;
}

// Clusters of `kernel` (its shared-memory limit raised) that the device runs at once for this
// shape: 0 when none fits (a device partitioned by MPS or green contexts may not fit one) or
// when the device refuses the question. Asked once per device and shape; `counts` is one per
// kernel variant (a static of the caller's instantiation).
struct ClusterCounts {
  std::mutex mutex;
  std::map<std::tuple<int, int, int, int>, int> known;
};

int resident_clusters(ClusterCounts& counts, const void* kernel, const CeKernelArgs& a,
                      int threads, int device, bool balanced = false) {
  const auto key = std::make_tuple(device, a.cluster, a.slice_chunks, threads);
  std::lock_guard<std::mutex> lock(counts.mutex);
  if (const auto it = counts.known.find(key); it != counts.known.end()) return it->second;
  cudaLaunchAttribute attributes[2]{};
  cudaLaunchConfig_t config = slice_config(a, 1, threads, attributes, nullptr, balanced);
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    (void)cudaGetLastError();  // a refusal means: use the other kernels
    clusters = 0;
  }
  counts.known.emplace(key, clusters);
  return clusters;
}

// Whether at least one cluster of the kernel fits the device.
template <DType D, DType G, SliceMode M, bool A, bool S>
bool cluster_fits(const CeKernelArgs& a, int threads, int device) {
  static ClusterCounts counts;
  allow_slice_shared<D, G, M, A, S>(device);
  return resident_clusters(counts, reinterpret_cast<const void*>(ce_slice_kernel<D, G, M, A, S>),
                           a, threads, device) > 0;
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
    cudaLaunchAttribute attributes[2]{};
    const cudaLaunchConfig_t config =
        slice_config(part, std::min(per_launch, a.rows - base), threads,
                     M == SliceMode::Grad ? nullptr : attributes, stream);
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

// Calls f(argmax, smoothing) with the call's two flags as std::bool_constant values.
template <class F>
void with_flags(const CeKernelArgs& a, F&& f) {
  const bool argmax = a.argmax != nullptr, smoothing = a.smoothing != 0;
  if (argmax && smoothing)
    f(std::true_type{}, std::true_type{});
  else if (argmax)
    f(std::true_type{}, std::false_type{});
  else if (smoothing)
    f(std::false_type{}, std::true_type{});
  else
    f(std::false_type{}, std::false_type{});
}

template <DType D, DType G, SliceMode M>
void launch_variant(const CeKernelArgs& a, int threads, int device, void* stream) {
  with_flags(a, [&](auto argmax, auto smoothing) {
    launch_slice<D, G, M, decltype(argmax)::value, decltype(smoothing)::value>(a, threads, device,
                                                                               stream);
  });
}

// The persistent Fused kernel on a grid of min(rows, resident clusters) clusters (no row's
// bits depend on it), or the one-cluster-a-row Fused kernel when no cluster of it fits.
template <DType D, DType G, bool A, bool S>
void launch_persistent(const CeKernelArgs& a, int threads, int device, void* stream) {
  const auto kernel = ce_fused_persistent_kernel<D, G, A, S>;
  static std::atomic<uint64_t> raised{0};
  static ClusterCounts counts;
  allow_all_shared(reinterpret_cast<const void*>(kernel), device, "ce_fused_persistent_kernel",
                   raised);
  // Load-balanced placement: the hardware may put a cluster's blocks where they fit rather
  // than spread over distinct multiprocessors, so more clusters are resident (H200, bf16
  // [*, 131072]: 96 against 92) and grad in forward runs 0.2888 -> 0.2879 ms (same lease).
  const int resident = resident_clusters(counts, reinterpret_cast<const void*>(kernel), a,
                                         threads, device, /*balanced=*/true);
  if (resident < 1) return launch_slice<D, G, SliceMode::Fused, A, S>(a, threads, device, stream);
  CeKernelArgs all = a;
  all.row_base = 0;  // one launch takes every row
  cudaLaunchAttribute attributes[3]{};
  cudaLaunchConfig_t config = slice_config(all, std::min<int64_t>(a.rows, resident), threads,
                                           attributes, stream, /*balanced=*/true);
  attributes[config.numAttrs++] = programmatic_serialization();
  launch_zero_row_claims(all.row_claims, stream);
  check_cuda(cudaLaunchKernelEx(&config, kernel, all),
             "cudaLaunchKernelEx(ce_fused_persistent_kernel)");
}

template <DType D, DType G>
void persistent_for(const CeKernelArgs& a, int threads, int device, void* stream) {
  with_flags(a, [&](auto argmax, auto smoothing) {
    launch_persistent<D, G, decltype(argmax)::value, decltype(smoothing)::value>(a, threads,
                                                                                device, stream);
  });
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

bool ce_slice_fused_persistent_fits(const CeKernelArgs& a, DType logits, DType grad) {
  // The gradient's vector stores: a pack of one chunk's elements in the grad dtype.
  const int64_t pack = std::min(16, 16 / element_bytes(logits) * element_bytes(grad));
  return ce_stream_stats_fits(a, logits) && a.grad != nullptr &&
         a.row_claims != nullptr &&
         reinterpret_cast<uintptr_t>(a.row_claims) % alignof(unsigned long long) == 0 &&
         reinterpret_cast<uintptr_t>(a.grad) % pack == 0 &&
         a.grad_stride * element_bytes(grad) % pack == 0;
}

void launch_ce_slice_fused_persistent(const CeKernelArgs& a, DType logits, DType grad,
                                      int threads, int device, void* stream) {
  TE_SLICE_DISPATCH(persistent_for, a, threads, device, stream)
}

void launch_ce_slice_grad(const CeKernelArgs& a, DType logits, DType grad, int threads,
                          int device, void* stream) {
  TE_SLICE_DISPATCH(grad_for, a, threads, device, stream)
}

#undef TE_SLICE_DISPATCH

}  // namespace switchyard::te
