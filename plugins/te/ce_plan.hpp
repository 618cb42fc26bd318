// How te runs one cross-entropy problem: the kernels' block sizes and the workspace. A pure
// function of the problem (never of the batch's neighbours, the grid or the device), so a
// row's result depends only on the row: the plan fixes each row's summation order.
#ifndef SWITCHYARD_TE_CE_PLAN_HPP
#define SWITCHYARD_TE_CE_PLAN_HPP

#include "kernel_args.hpp"

#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::te {

// Chunks of 16 bytes a thread loads before it uses the first (bytes in flight per thread).
constexpr int kCeUnroll = 4;
constexpr int kCeMaxThreads = 512;
// Grad in forward at tp_size 1: one block per row, up to 512 threads, two blocks per
// multiprocessor (one can be in its statistics pass while the other writes its gradient).
// Each thread keeps up to kCeFusedSlots of its chunks in shared memory for the second pass
// (13 x 16 B x 512 threads = 104 KiB a block, 208 KiB for the two); the rest of the row is
// read again from L2 (bf16 V = 131072: 19 of 32 chunks, 152 KiB a row, about 40 MB for the
// 264 rows in flight).
constexpr int kCeFusedMaxThreads = 512;
constexpr int kCeFusedBlocksPerSm = 2;
constexpr int kCeFusedSlots = 13;

// Slice kernels (ce_slice_kernels.cu), used whenever a row fits kCeSliceMaxCluster slices: the
// row is cut into `cluster` contiguous slices of at most kCeSliceMaxChunks 16-byte chunks
// (64 KiB), one block per slice, and the blocks of a row form one thread-block cluster that
// merges the slices' statistics through distributed shared memory. Each block copies its slice
// into shared memory with bulk copies (4 pieces, one mbarrier each), so three blocks of
// <= 256 threads fit one multiprocessor (3 x 64 KiB of loads in flight, and one block's
// statistics overlap another's gradient).
constexpr int kCeSliceMaxChunks = 4096;  // 64 KiB
constexpr int kCeSliceMaxCluster = 8;    // the portable cluster size
constexpr int kCeSliceMaxThreads = 256;
constexpr int kCeSliceBlocksPerSm = 3;
constexpr int kCeSliceChunksPerThread = 16;  // at most, per slice
constexpr int kCeSliceUnroll = 4;            // chunks per thread in one piece
constexpr int kCeSlicePieces = kCeSliceChunksPerThread / kCeSliceUnroll;
// The streamed statistics kernel (ce_stream_kernels.cu), the plain forward for logits that can
// be bulk-copied: same slices, same threads, same bits, but a resident block reads its rows
// group by group through a ring of kCeStreamStages stages (a group of 256 threads: 16 KiB, so
// 48 KiB a block; four blocks, 32 warps and 192 KiB of loads in flight per multiprocessor.
// Measured on the H200, bf16 [2048, 131072]: 4 x 3 stages 0.162 ms, 3 x 4 stages 0.168).
constexpr int kCeStreamStages = 3;
constexpr int kCeStreamBlocksPerSm = 4;
// The gradient (the slice kernel's Grad mode: the backward, and the second pass of grad in
// forward at tp_size > 1) has no cluster and no reduction, every element being g (p - q) of
// its own logit, so it cuts rows into its own, small slices: 4 KiB per block of 32 threads.
// Up to 32 such blocks (the multiprocessor's limit) run side by side, each one bulk copy in
// flight and one short life, so little waits at a block's start and at the grid's end.
// Measured on the H200, bf16 [2048, 131072] backward (slice bytes / threads): 64 KiB / 256
// (the statistics' slices) 0.2714 ms; 16 KiB / 64 0.2645; 8 KiB / 32 0.2639; 4 KiB / 32
// 0.2616; 4 KiB / 64 0.2645; 2 KiB / 32 0.2642; 2 KiB / 64 0.348; 1 KiB / 32 0.361.
constexpr int kCeGradSliceChunks = 256;  // 4 KiB
// One warp a gradient slice: the Grad kernel's launch bounds (ce_slice_kernels.cu) say so.
static_assert(kCeGradSliceChunks <= 32 * kCeSliceChunksPerThread,
              "a gradient slice must fit 32 threads of kCeSliceChunksPerThread chunks");

struct CePlan {
  DType logits = DType::F32;
  DType grad = DType::F32;
  int vec = 4;               // logits per 16-byte chunk
  int64_t chunks = 0;        // chunks per row: ceil(vocab_local / vec)
  int stats_threads = 32;    // forward statistics and gradient kernels
  int fused_threads = 32;    // tp_size 1 grad in forward
  int fused_slots = 0;       // chunks per thread that fit the row (before the device limit)
  // Slice kernels: whether the row fits, the cluster (slices per row), chunks per slice and
  // threads per block. All follow from (vocab_local, logits dtype) only.
  bool slices = false;
  int cluster = 1;
  int slice_chunks = 0;
  int slice_threads = 32;
  // The gradient's slices (kCeGradSliceChunks at most, as even as whole chunks allow), when
  // `slices`: a function of (vocab_local, logits dtype) too, though no bit depends on it.
  int grad_slices = 1;
  int grad_slice_chunks = 0;
  int grad_threads = 32;
  // tp_size > 1: tp_size x rows x sizeof(CeRowStats); tp_size 1 grad in forward on slices:
  // kRowClaimsBytes (the persistent kernel's row counter, row_claims.hpp); else 0.
  int64_t workspace_bytes = 0;
  CeScalars scalars{};
};

// The problem must have passed validate_ce_problem.
CePlan ce_plan(const sy_ce_problem& problem);

// Collectives one forward issues: one all-gather of the row statistics at tp_size > 1.
int32_t ce_forward_collectives(const sy_ce_problem& problem);

DType to_dtype(DLDataType type);  // float32, bfloat16 or float16 (validated before)

}  // namespace switchyard::te

#endif
