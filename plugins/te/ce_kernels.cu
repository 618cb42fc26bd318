// te's cross-entropy kernels (README.md, "Cross entropy"). One block per row everywhere, so a
// row's result depends only on the row and on the plan (block size), never on the batch.
//
//   ce_stats_kernel   forward, one pass: online softmax statistics of the row in fp32 from
//                     16-byte loads; at tp_size 1 it writes lse, loss, argmax itself, at
//                     tp_size > 1 this rank's CeRowStats (the all-gather's send buffer)
//   ce_merge_kernel   tp_size > 1, after the all-gather: merges the ranks' statistics in rank
//                     order and writes lse, loss, argmax (identical bits on every rank)
//   ce_grad_kernel    backward, and the second pass of tp_size > 1 grad in forward:
//                     g * (softmax - q), rounded once to the grad dtype, in place or not
//   ce_fused_kernel   tp_size 1 grad in forward: statistics, then the gradient from the row
//                     kept in shared memory (the rest re-read from L2)
//
// The chunk -> thread map is the same in every kernel shape: chunk k (16 bytes of logits, vec
// elements) belongs to thread k mod T, and a thread visits its chunks in increasing k. Vector
// loads are used for rows whose address allows them; the values and the arithmetic are the
// same either way, so the bits do not depend on the row's alignment.
#include "ce_kernels.hpp"

#include "ce_device.cuh"
#include "ce_plan.hpp"
#include "cuda_support.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <string>

namespace switchyard::te {
namespace {

constexpr int kUnroll = kCeUnroll;

// ---- forward statistics ---------------------------------------------------------------------

template <DType D>
__global__ void __launch_bounds__(kCeMaxThreads) ce_stats_kernel(CeKernelArgs a) {
  using raw = typename DT<D>::raw;
  constexpr int VEC = chunk_elements<D>();
  __shared__ CeState scratch[32];
  const int64_t row = blockIdx.x;
  if (row >= a.rows) return;  // the grid is exactly `rows` blocks; a guard, uniform per block
  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  const raw* z = static_cast<const raw*>(a.logits) + row * a.logits_stride;
  const bool vector = aligned_to(z, 16);
  const bool smoothing = a.smoothing != 0;

  CeState st = ce_state_init();
  for (int64_t base = 0; base < a.chunks; base += static_cast<int64_t>(T) * kUnroll) {
    Pack<D, VEC> pk[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = base + static_cast<int64_t>(u) * T + tid;
      if (k < a.chunks) load_chunk<Cache::Streaming>(pk[u], z, k, a.vocab_local, vector);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = base + static_cast<int64_t>(u) * T + tid;
      if (k < a.chunks) {
        float v[VEC];
        unpack(pk[u], v);
        ce_accumulate(st, v, k * VEC, valid_in_chunk(k, VEC, a.vocab_local), smoothing);
      }
    }
  }
  st = block_merge(st, scratch);
  if (tid != 0) return;
  const RowLabel lab = row_label(a, row);
  const float target = lab.local_col >= 0 ? DT<D>::to_float(z[lab.local_col]) : 0.0f;
  if (a.stats != nullptr) {
    write_row_stats(a, row, st, target);
  } else {
    write_row_result(a, row, st, target, lab);
  }
}

// ---- tensor-parallel merge ------------------------------------------------------------------

__global__ void ce_merge_kernel(CeKernelArgs a) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= a.rows) return;
  const CeRowStats first = a.stats[row];
  CeState st{first.max, first.sum_exp, first.sum_logits, first.argmax};
  float target = first.target;
  for (int r = 1; r < a.tp_size; ++r) {
    const CeRowStats s = a.stats[static_cast<int64_t>(r) * a.rows + row];
    st = ce_merge(st, CeState{s.max, s.sum_exp, s.sum_logits, s.argmax});
    target += s.target;  // only the owning rank's is not 0
  }
  const RowLabel lab = row_label(a, row);
  const CeRowResult res =
      ce_finish(st.max, st.sum_exp, st.sum_logits, target, lab.owned, lab.ignored, a.scalars);
  a.lse[row] = res.lse;
  a.loss[row] = res.loss;
  if (a.argmax != nullptr) a.argmax[row] = st.argmax;  // already global ids
}

// ---- gradient -----------------------------------------------------------------------------------

template <DType D, DType G>
__global__ void __launch_bounds__(kCeMaxThreads) ce_grad_kernel(CeKernelArgs a) {
  using raw = typename DT<D>::raw;
  using graw = typename DT<G>::raw;
  constexpr int VEC = chunk_elements<D>();
  const int64_t row = blockIdx.x;
  if (row >= a.rows) return;
  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  const raw* z = static_cast<const raw*>(a.logits) + row * a.logits_stride;
  graw* out = static_cast<graw*>(a.grad) + row * a.grad_stride;
  const bool load_vector = aligned_to(z, 16);
  const bool store_vector = aligned_to(out, pack_alignment<G, VEC>());
  const RowLabel lab = row_label(a, row);
  if (lab.ignored) {
    zero_grad_row<G, VEC>(out, a.chunks, a.vocab_local, store_vector);
    return;
  }
  const GradRow r = grad_row(a, a.row_scale[row], a.lse_in[row], lab);
  for (int64_t base = 0; base < a.chunks; base += static_cast<int64_t>(T) * kUnroll) {
    Pack<D, VEC> pk[kUnroll];
    // All loads of the step before any store: with grad over the logits, a thread reads its
    // chunks before it overwrites them (no other thread touches them).
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = base + static_cast<int64_t>(u) * T + tid;
      if (k < a.chunks) load_chunk<Cache::Streaming>(pk[u], z, k, a.vocab_local, load_vector);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = base + static_cast<int64_t>(u) * T + tid;
      if (k < a.chunks) {
        float v[VEC];
        unpack(pk[u], v);
        store_grad_chunk<G>(out, k, v, r, a.vocab_local, store_vector);
      }
    }
  }
}

// ---- grad in forward, tp_size 1 ---------------------------------------------------------------

template <DType D, DType G>
__global__ void __launch_bounds__(kCeFusedMaxThreads, kCeFusedBlocksPerSm) ce_fused_kernel(CeKernelArgs a) {
  using raw = typename DT<D>::raw;
  using graw = typename DT<G>::raw;
  constexpr int VEC = chunk_elements<D>();
  using Chunk = Pack<D, VEC>;
  extern __shared__ uint4 staged[];  // [slots][T] chunks (16 bytes each)
  __shared__ CeState scratch[32];
  __shared__ float row_lse;
  const int64_t row = blockIdx.x;
  if (row >= a.rows) return;
  const int T = static_cast<int>(blockDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  const raw* z = static_cast<const raw*>(a.logits) + row * a.logits_stride;
  graw* out = static_cast<graw*>(a.grad) + row * a.grad_stride;
  const bool load_vector = aligned_to(z, 16);
  const bool store_vector = aligned_to(out, pack_alignment<G, VEC>());
  const bool smoothing = a.smoothing != 0;
  const RowLabel lab = row_label(a, row);
  // The target logit is read before the barrier below, hence before any gradient is written
  // over the logits.
  float target = 0.0f;
  if (tid == 0 && lab.local_col >= 0) target = DT<D>::to_float(z[lab.local_col]);

  // Pass 1: statistics; the thread's first `slots` chunks are kept in shared memory.
  CeState st = ce_state_init();
  int slot = 0;
  for (int64_t base = 0; base < a.chunks; base += static_cast<int64_t>(T) * kUnroll) {
    Chunk pk[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = base + static_cast<int64_t>(u) * T + tid;
      if (k < a.chunks) load_chunk<Cache::KeepInL2>(pk[u], z, k, a.vocab_local, load_vector);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = base + static_cast<int64_t>(u) * T + tid;
      if (k < a.chunks) {
        if (slot + u < a.slots) memcpy(&staged[(slot + u) * T + tid], &pk[u], 16);
        float v[VEC];
        unpack(pk[u], v);
        ce_accumulate(st, v, k * VEC, valid_in_chunk(k, VEC, a.vocab_local), smoothing);
      }
    }
    slot += kUnroll;
  }
  st = block_merge(st, scratch);
  if (tid == 0) row_lse = write_row_result(a, row, st, target, lab);
  __syncthreads();

  // Pass 2: the gradient, over the logits or into its own buffer.
  if (lab.ignored) {
    zero_grad_row<G, VEC>(out, a.chunks, a.vocab_local, store_vector);
    return;
  }
  const GradRow r = grad_row(a, a.row_scale[row], row_lse, lab);
  slot = 0;
  for (int64_t base = 0; base < a.chunks; base += static_cast<int64_t>(T) * kUnroll) {
    Chunk pk[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = base + static_cast<int64_t>(u) * T + tid;
      if (k < a.chunks) {
        if (slot + u < a.slots)
          memcpy(&pk[u], &staged[(slot + u) * T + tid], 16);
        else
          load_chunk<Cache::Streaming>(pk[u], z, k, a.vocab_local, load_vector);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = base + static_cast<int64_t>(u) * T + tid;
      if (k < a.chunks) {
        float v[VEC];
        unpack(pk[u], v);
        store_grad_chunk<G>(out, k, v, r, a.vocab_local, store_vector);
      }
    }
    slot += kUnroll;
  }
}

// ---- launch ---------------------------------------------------------------------------------------

cudaStream_t stream_of(void* stream) { return static_cast<cudaStream_t>(stream); }

template <DType D>
void stats_for(const CeKernelArgs& a, int threads, void* stream) {
  ce_stats_kernel<D><<<static_cast<unsigned>(a.rows), threads, 0, stream_of(stream)>>>(a);
}

template <DType D, DType G>
void grad_for(const CeKernelArgs& a, int threads, void* stream) {
  ce_grad_kernel<D, G><<<static_cast<unsigned>(a.rows), threads, 0, stream_of(stream)>>>(a);
}

// How many chunks per thread the fused kernel may keep in shared memory on this device, and
// the kernel's dynamic shared memory limit raised to match (once per device).
template <DType D, DType G>
int fused_slots_allowed(int device, int threads, int wanted) {
  static std::atomic<uint64_t> raised{0};  // one bit per device id < 64
  const auto kernel = ce_fused_kernel<D, G>;
  const DeviceInfo info = device_info(device);
  const int available = info.max_shared_per_block_optin -
                        static_shared_bytes(reinterpret_cast<const void*>(kernel));
  const int slots = std::max(0, std::min(wanted, available / (threads * 16)));
  const uint64_t bit = device < 64 ? (uint64_t{1} << device) : 0;
  if (bit == 0 || (raised.load(std::memory_order_acquire) & bit) == 0) {
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    std::max(0, available)),
               "cudaFuncSetAttribute(ce_fused_kernel, max dynamic shared memory)");
    raised.fetch_or(bit, std::memory_order_acq_rel);
  }
  return slots;
}

template <DType D, DType G>
void fused_for(CeKernelArgs a, int threads, int wanted_slots, int device, void* stream) {
  a.slots = fused_slots_allowed<D, G>(device, threads, wanted_slots);
  const size_t shared = static_cast<size_t>(a.slots) * static_cast<size_t>(threads) * 16;
  ce_fused_kernel<D, G>
      <<<static_cast<unsigned>(a.rows), threads, shared, stream_of(stream)>>>(a);
}

}  // namespace

void launch_ce_stats(const CeKernelArgs& a, DType logits, int threads, void* stream) {
  switch (logits) {
    case DType::BF16: stats_for<DType::BF16>(a, threads, stream); break;
    case DType::F16: stats_for<DType::F16>(a, threads, stream); break;
    default: stats_for<DType::F32>(a, threads, stream); break;
  }
  check_cuda(cudaGetLastError(), "launching ce_stats_kernel");
}

void launch_ce_merge(const CeKernelArgs& a, void* stream) {
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>((a.rows + kThreads - 1) / kThreads);
  ce_merge_kernel<<<blocks, kThreads, 0, stream_of(stream)>>>(a);
  check_cuda(cudaGetLastError(), "launching ce_merge_kernel");
}

#define TE_DISPATCH_GRAD(FN, ...)                                                  \
  switch (logits) {                                                                \
    case DType::BF16:                                                              \
      switch (grad) {                                                              \
        case DType::BF16: FN<DType::BF16, DType::BF16>(__VA_ARGS__); break;        \
        case DType::F16: FN<DType::BF16, DType::F16>(__VA_ARGS__); break;          \
        default: FN<DType::BF16, DType::F32>(__VA_ARGS__); break;                  \
      }                                                                            \
      break;                                                                       \
    case DType::F16:                                                               \
      switch (grad) {                                                              \
        case DType::BF16: FN<DType::F16, DType::BF16>(__VA_ARGS__); break;         \
        case DType::F16: FN<DType::F16, DType::F16>(__VA_ARGS__); break;           \
        default: FN<DType::F16, DType::F32>(__VA_ARGS__); break;                   \
      }                                                                            \
      break;                                                                       \
    default:                                                                       \
      switch (grad) {                                                              \
        case DType::BF16: FN<DType::F32, DType::BF16>(__VA_ARGS__); break;         \
        case DType::F16: FN<DType::F32, DType::F16>(__VA_ARGS__); break;           \
        default: FN<DType::F32, DType::F32>(__VA_ARGS__); break;                   \
      }                                                                            \
      break;                                                                       \
  }

void launch_ce_grad(const CeKernelArgs& a, DType logits, DType grad, int threads, void* stream) {
  TE_DISPATCH_GRAD(grad_for, a, threads, stream)
  check_cuda(cudaGetLastError(), "launching ce_grad_kernel");
}

void launch_ce_fused(const CeKernelArgs& a, DType logits, DType grad, int threads,
                     int wanted_slots, int device, void* stream) {
  TE_DISPATCH_GRAD(fused_for, a, threads, wanted_slots, device, stream)
  check_cuda(cudaGetLastError(), "launching ce_fused_kernel");
}

#undef TE_DISPATCH_GRAD

}  // namespace switchyard::te
