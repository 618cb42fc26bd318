// How te runs one normalization problem: the register layouts of a row (one row per block at
// a time), the fixed partition of rows into chunks for the two-stage dgamma/dbeta, and the
// workspace. A pure function of the problem's kind, rows, hidden, dtypes and memory-efficient
// flag: never of sm_margin, the grid or the device, so results are the same whatever the grid
// (DESIGN §3.9).
#ifndef SWITCHYARD_TE_NORM_PLAN_HPP
#define SWITCHYARD_TE_NORM_PLAN_HPP

#include "kernel_args.hpp"

#include <switchyard/norm.h>

#include <cstdint>

namespace switchyard::te {

constexpr int64_t kNormMaxHidden = 16384;
constexpr int kNormMaxBlock = 512;

// A row kept in registers by one block: each of `threads` threads holds chunks_per_thread
// chunks of `vec` consecutive elements (16 bytes of x); thread t holds chunks t, t + threads,
// ...
struct NormLayout {
  int vec = 8;
  int chunks_per_thread = 1;  // 1, 2, 4 or 8
  int threads = 32;           // one row at a time; a multiple of 32, <= 512
};

struct NormPlan {
  NormLayout forward;
  NormLayout backward;
  int64_t chunks = 0;          // chunks of vec elements per row: ceil(hidden / vec)
  // The fixed row partition of the dgamma/dbeta partials: chunk_count chunks of at most
  // rows_per_chunk rows each, strided or consecutive by the backward layout (ChunkRows).
  int64_t rows_per_chunk = 1;
  int64_t chunk_count = 0;     // ceil(rows / rows_per_chunk), at most kNormMaxRowChunks
  int parameters = 0;          // partial arrays: LayerNorm 2 (gamma, beta), RMSNorm 1, L2Norm 0
  int64_t partial_bytes = 0;   // one partial array, 256-byte aligned
  // The forward's row counter (row_claims.hpp), after the partials (so the offset is the bytes
  // the backward needs); 0 bytes where the forward does not claim its rows.
  int64_t row_claims_offset = 0;
  int64_t row_claims_bytes = 0;
  int64_t workspace_bytes = 0; // parameters x partial_bytes + row_claims_bytes
};

// Whether the streamed forward claims its rows from a counter (norm_forward.cu,
// kForwardClaimsRows, which says why): RMS and L2, not LayerNorm.
constexpr bool norm_forward_claims_rows(bool layer) { return !layer; }
// Whether the forward reads rows of `chunks` 16-byte chunks straight from global memory into
// registers, one row a block, with no ring (norm_forward.cu, kForwardDirect, says why and what was
// measured): 16-bit RMS/L2 rows of 2048 to 4096 elements, whose plan then takes 32 elements a
// thread. Only at sm_margin 0 (its grid is the rows); otherwise the same layout streams.
constexpr bool norm_forward_reads_directly(bool layer, int vec, int64_t chunks) {
  return !layer && vec == 8 && chunks >= 256 && chunks <= 512;
}
// The most rows a forward claims (ClaimCursor counts its claims in 32 bits): more go by stride.
// Below 2^32 by room for the claim each block makes past the last row (grids are far smaller
// than 2^24 blocks), so that the count never wraps.
constexpr int64_t kNormMaxClaimedRows = (int64_t{1} << 32) - (int64_t{1} << 24);

// The dgamma/dbeta partition: at most kNormMaxRowChunks chunks (for 128-thread backward blocks,
// scaled down for wider ones): about one per backward block an H200 holds at once, so that every
// block has work and none takes two; the partials stay <= 32 MiB.
constexpr int64_t kNormMaxRowChunks = 512;
// The multiprocessors the partition is sized for (an H200's, an H100 SXM's). A constant, not
// the device's count, so that dgamma's bits are the same on every GPU; on a GPU with fewer,
// some blocks take two chunks (slower, same bits).
constexpr int64_t kNormPlanMultiprocessors = 132;
// What the partition assumes of each of them: 64 Ki registers, and the backward's 128 registers
// a thread (its __launch_bounds__(kNormMaxBlock, 1) cap, which its 16-bit kernels reach).
constexpr int64_t kNormPlanRegistersPerMultiprocessor = 65536;
constexpr int64_t kNormPlanBackwardRegisters = 128;

// Backward blocks of `threads` threads that one such multiprocessor holds (at least 1).
constexpr int64_t norm_plan_resident_blocks(int threads) {
  const int64_t blocks = kNormPlanRegistersPerMultiprocessor / (threads * kNormPlanBackwardRegisters);
  return blocks > 1 ? blocks : 1;
}

// The problem must have passed validate_norm_problem (hidden <= kNormMaxHidden).
NormPlan norm_plan(const sy_norm_problem& problem);

}  // namespace switchyard::te

#endif
