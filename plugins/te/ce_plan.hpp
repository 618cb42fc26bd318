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
// Grad in forward at tp_size 1: one block per row, up to 1024 threads, each keeping up to
// kCeFusedSlots of its chunks in shared memory for the second pass (14 x 16 B x 1024 threads
// = 224 KiB, within the H200's 227 KiB); the rest is read again from L2.
constexpr int kCeFusedMaxThreads = 1024;
constexpr int kCeFusedSlots = 14;

struct CePlan {
  DType logits = DType::F32;
  DType grad = DType::F32;
  int vec = 4;               // logits per 16-byte chunk
  int64_t chunks = 0;        // chunks per row: ceil(vocab_local / vec)
  int stats_threads = 32;    // forward statistics and gradient kernels
  int fused_threads = 32;    // tp_size 1 grad in forward
  int fused_slots = 0;       // chunks per thread that fit the row (before the device limit)
  int64_t workspace_bytes = 0;  // tp_size > 1: tp_size x rows x sizeof(CeRowStats)
  CeScalars scalars{};
};

// The problem must have passed validate_ce_problem.
CePlan ce_plan(const sy_ce_problem& problem);

// Collectives one forward issues: one all-gather of the row statistics at tp_size > 1.
int32_t ce_forward_collectives(const sy_ce_problem& problem);

DType to_dtype(DLDataType type);  // float32, bfloat16 or float16 (validated before)

}  // namespace switchyard::te

#endif
