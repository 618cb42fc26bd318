// Launchers of te's cross-entropy kernels (ce_kernels.cu). Each enqueues on `stream` (a
// cudaStream_t) on the current device and throws sy::Failure when the launch fails; none
// synchronises. rows must be in [1, 2^31 - 1] (one block per row).
#ifndef SWITCHYARD_TE_CE_KERNELS_HPP
#define SWITCHYARD_TE_CE_KERNELS_HPP

#include "kernel_args.hpp"

namespace switchyard::te {

// Forward statistics. a.stats == NULL: writes lse, loss (and argmax) — tp_size 1. Otherwise
// writes this rank's CeRowStats to a.stats[0, rows).
void launch_ce_stats(const CeKernelArgs& a, DType logits, int threads, void* stream);

// tp_size > 1: a.stats holds [tp_size][rows] gathered statistics; writes lse, loss, argmax.
void launch_ce_merge(const CeKernelArgs& a, void* stream);

// grad = row_scale * (softmax(logits) - q) with lse from a.lse_in, into a.grad.
void launch_ce_grad(const CeKernelArgs& a, DType logits, DType grad, int threads, void* stream);

// tp_size 1 grad in forward: lse, loss (argmax) and the gradient in one kernel. Keeps up to
// wanted_slots chunks per thread in shared memory (fewer when `device` has less).
void launch_ce_fused(const CeKernelArgs& a, DType logits, DType grad, int threads,
                     int wanted_slots, int device, void* stream);

// ---- slice kernels (ce_slice_kernels.cu; a.cluster and a.slice_chunks from the plan) -------
// Any number of rows: more than (2^31 - 1) / cluster are cut into several launches.

// Whether the slice kernels can run this shape on `device`: one cluster of both the statistics and the grad-in-forward kernel fits the device (asked once per shape).
// The plain and the grad-in-forward paths ask the same question, so they agree on which kernel
// computes a row's statistics (and so on its bits).
bool ce_slices_available(const CeKernelArgs& a, DType logits, DType grad, int threads,
                         int device);

// As launch_ce_stats, with the row cut into a.cluster slices: the streamed kernel when the
// logits fit it, else one thread-block cluster a row.
void launch_ce_slice_stats(const CeKernelArgs& a, DType logits, int threads, int device,
                           void* stream);

// Whether launch_ce_stream_stats can take these logits: every row can be bulk-copied
// (16-byte aligned base and row stride).
bool ce_stream_stats_fits(const CeKernelArgs& a, DType logits);

// As launch_ce_slice_stats, with the same bits (ce_stream_kernels.cu): resident blocks read
// their rows through a ring of shared-memory stages. Needs ce_stream_stats_fits.
void launch_ce_stream_stats(const CeKernelArgs& a, DType logits, int threads, int device,
                            void* stream);

// tp_size 1 grad in forward: lse, loss (argmax) and the gradient, one HBM read of the row.
void launch_ce_slice_fused(const CeKernelArgs& a, DType logits, DType grad, int threads,
                           int device, void* stream);

// Whether launch_ce_slice_fused_persistent can take these tensors: every row of the logits can
// be bulk-copied (as ce_stream_stats_fits), every row of a.grad is aligned for the gradient's
// vector stores, and a.row_claims is an aligned counter.
bool ce_slice_fused_persistent_fits(const CeKernelArgs& a, DType logits, DType grad);

// As launch_ce_slice_fused, with the same bits: resident clusters claim rows one at a time
// (through a.row_claims, which it zeroes on the stream first) and refill each piece of their
// slices with the next row while they write this row's gradient.
// Needs ce_slice_fused_persistent_fits; falls back to launch_ce_slice_fused when no cluster
// of it fits the device.
void launch_ce_slice_fused_persistent(const CeKernelArgs& a, DType logits, DType grad,
                                      int threads, int device, void* stream);

// As launch_ce_grad (no cluster: runs wherever the row fits the plan's slices).
void launch_ce_slice_grad(const CeKernelArgs& a, DType logits, DType grad, int threads,
                          int device, void* stream);

}  // namespace switchyard::te

#endif
