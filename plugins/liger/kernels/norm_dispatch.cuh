// Which norm kernel runs, with which grid: `launch(grid, threads, shared_bytes, kernel, args...)`,
// as for cross entropy (norm_kernels.cu launches on a stream, tests/liger's emulator on fibers).
// The columns a thread owns follow from a.threads (norm_geometry.hpp), i.e. from the problem
// alone; the ring kernels (norm_ring.cuh) are chosen for rows they can stream and give the same
// bits as the register kernels they stand for.
#ifndef SWITCHYARD_LIGER_KERNELS_NORM_DISPATCH_CUH
#define SWITCHYARD_LIGER_KERNELS_NORM_DISPATCH_CUH

#include "norm_device.cuh"
#include "norm_geometry.hpp"
#include "norm_ring.cuh"

#include <cstdint>
#include <type_traits>

namespace switchyard::liger {
namespace {

// Chunks per thread of the forward; above kNormForwardChunksPerThread the re-reading kernel.
inline int64_t forward_chunks_per_thread(const NormForwardArgs& a) {
  return (norm_chunks(a.hidden) + a.threads - 1) / a.threads;
}

// The backward's register path may hold four chunks a thread (LayerNorm rows of one 16-bit
// dtype, not memory-efficient).
inline bool backward_four_chunks(const NormBackwardArgs& a) {
  return norm_backward_four_chunks(a.kind, a.memory_efficient, a.y_dt, a.x_or_y_dt, a.x_dt);
}

// Chunks per thread of the backward's register path.
inline int64_t backward_chunks_per_thread(const NormBackwardArgs& a) {
  return (norm_chunks(a.hidden) + a.threads - 1) / a.threads;
}

// H <= 8192 with at most norm_backward_chunks_per_thread chunks a thread (a.threads =
// norm_backward_threads(H, backward_four_chunks(a))).
inline bool backward_in_registers(const NormBackwardArgs& a) {
  return norm_chunks(a.hidden) <= kNormBackwardRegisterMaxChunks &&
         backward_chunks_per_thread(a) <=
             norm_backward_chunks_per_thread(backward_four_chunks(a));
}

// Dynamic shared memory of the shared-memory backward (0 on the register path).
inline int64_t backward_shared_bytes(const NormBackwardArgs& a) {
  if (backward_in_registers(a)) return 0;
  return norm_backward_shared_bytes(a.hidden, a.dweight_partial != nullptr,
                                    a.dbias_partial != nullptr);
}

// The register kernel a chunk count runs on: 1, 2 or kNormForwardChunksPerThread chunks.
inline int forward_kernel_chunks(int64_t per_thread) {
  return per_thread <= 1 ? 1 : per_thread <= 2 ? 2 : kNormForwardChunksPerThread;
}

// The backward's: 1, 2 or (backward_four_chunks only) 4 chunks.
inline int backward_kernel_chunks(int64_t per_thread) {
  return per_thread <= 1 ? 1 : per_thread <= 2 ? 2 : kNormBackwardWideChunksPerThread;
}

// The forward's ring plan (stages == 0: the register kernel runs): 16-bit x with y and gamma/beta
// of the same dtype, every tensor 16-byte aligned, rows a multiple of 16 bytes (H % 8 == 0),
// the register path's hidden sizes.
inline RingPlan forward_ring_plan(const NormForwardArgs& a, int64_t per_thread) {
  const bool one_16bit_dtype = a.x_dt != Dt::F32 && a.y_dt == a.x_dt &&
                               (a.weight == nullptr || a.w_dt == a.x_dt) &&
                               (a.bias == nullptr || a.w_dt == a.x_dt);
  if (a.sm_count <= 0 || !a.aligned || !one_16bit_dtype || per_thread > kNormForwardChunksPerThread)
    return RingPlan{};
  const int64_t row = a.hidden * 2;
  const int64_t rows[3] = {row, a.residual != nullptr ? row : 0, 0};
  return ring_plan(rows, a.threads, kMaxRowThreads * kRingForwardMinBlocks);
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The backward's: every row tensor and gamma/beta of one 16-bit dtype, aligned (the partial
// rows too: whole chunks of them are stored 16 bytes at a time), H % 8 == 0, not
// memory-efficient, the register path (H <= 8192).
inline RingPlan backward_ring_plan(const NormBackwardArgs& a) {
  const bool one_16bit_dtype = a.y_dt == a.x_or_y_dt && a.y_dt == a.x_dt && a.x_dt != Dt::F32 &&
                               (a.weight == nullptr || a.w_dt == a.x_dt);
  if (a.sm_count <= 0 || !a.aligned || !one_16bit_dtype || a.memory_efficient ||
      !backward_in_registers(a) || !aligned16(a.dweight_partial) || !aligned16(a.dbias_partial))
    return RingPlan{};
  const int64_t row = a.hidden * 2;
  const int64_t rows[3] = {row, row, a.d_residual_out != nullptr ? row : 0};
  return ring_plan(rows, a.threads, kNormBackwardMaxThreads * ring_backward_min_blocks(a.kind));
}

// The persistent grid of a ring kernel: every resident block, at most one per unit of work.
inline unsigned ring_grid(const RingPlan& plan, int sm_count, int64_t work) {
  const int64_t resident = static_cast<int64_t>(sm_count) * plan.blocks_per_sm;
  return static_cast<unsigned>(resident < work ? resident : work);
}

// Whether a ring kernel of K chunks a thread runs on its plain form (RingForm's kPlain): the
// flags it fixes (gamma present for RMS and LayerNorm, not zero-centred, no residual; the
// forward's beta present for LayerNorm) and every thread's K chunks in the row.
template <class Args>
bool full_chunks(const Args& a, int k) {
  return norm_chunks(a.hidden) == static_cast<int64_t>(a.threads) * k;
}
inline bool plain_forward(const NormForwardArgs& a, int k) {
  return a.residual == nullptr && !a.zero_centered &&
         (a.kind == NormKind::L2 || a.weight != nullptr) &&
         (a.kind != NormKind::Layer || a.bias != nullptr) && full_chunks(a, k);
}
inline bool plain_backward(const NormBackwardArgs& a, int k) {
  return a.d_residual_out == nullptr && !a.zero_centered &&
         (a.kind == NormKind::L2 || a.weight != nullptr) && full_chunks(a, k);
}

// Calls f(kernel-template selector) with the ring kernels' compile-time form: the dtype (BF16 or
// F16), the kind, for RMSNorm the casting mode, and whether the flags are the plain ones.
template <template <Dt, NormKind, bool, bool> class Pick, class Args, class F>
void with_ring_form(const Args& a, Dt d, bool plain, const F& f) {
  auto by_plain = [&](auto dtype, auto kind, auto llama) {
    constexpr Dt kD = decltype(dtype)::value;
    constexpr NormKind kKind = decltype(kind)::value;
    constexpr bool kLlama = decltype(llama)::value;
    if (plain)
      f(Pick<kD, kKind, kLlama, true>{});
    else
      f(Pick<kD, kKind, kLlama, false>{});
  };
  auto by_dtype = [&](auto kind, auto llama) {
    if (d == Dt::BF16)
      by_plain(std::integral_constant<Dt, Dt::BF16>{}, kind, llama);
    else
      by_plain(std::integral_constant<Dt, Dt::F16>{}, kind, llama);
  };
  using Layer = std::integral_constant<NormKind, NormKind::Layer>;
  using Rms = std::integral_constant<NormKind, NormKind::Rms>;
  using L2 = std::integral_constant<NormKind, NormKind::L2>;
  if (a.kind == NormKind::Layer)
    by_dtype(Layer{}, std::false_type{});
  else if (a.kind == NormKind::L2)
    by_dtype(L2{}, std::false_type{});
  else if (a.llama)
    by_dtype(Rms{}, std::true_type{});
  else
    by_dtype(Rms{}, std::false_type{});
}

// The ring kernels of a form, as selectors (a class template cannot take a kernel template).
template <Dt D, NormKind kKind, bool kLlama, bool kPlain>
struct ForwardRing {
  template <int K>
  static auto kernel() { return forward_ring_kernel<D, kKind, kLlama, kPlain, K>; }
};
template <Dt D, NormKind kKind, bool kLlama, bool kPlain>
struct BackwardRing {
  static constexpr NormKind kind = kKind;
  template <int K>
  static auto kernel() { return backward_ring_kernel<D, kKind, kLlama, kPlain, K>; }
};

template <int kWords, class Launch>
void dispatch_norm_forward_registers(Launch&& launch, const NormForwardArgs& a, int chunks) {
  const auto rows = static_cast<unsigned>(a.rows);
  if (chunks == 1)
    launch(rows, a.threads, 0, forward_register_kernel<1, kWords>, a);
  else if (chunks == 2)
    launch(rows, a.threads, 0, forward_register_kernel<2, kWords>, a);
  else
    launch(rows, a.threads, 0, forward_register_kernel<kNormForwardChunksPerThread, kWords>, a);
}

template <class Launch>
void dispatch_norm_forward_ring(Launch&& launch, const NormForwardArgs& a, const RingPlan& plan,
                                int chunks) {
  const unsigned grid = ring_grid(plan, a.sm_count, a.rows);
  const auto shared = static_cast<size_t>(plan.shared_bytes());
  with_ring_form<ForwardRing>(a, a.x_dt, plain_forward(a, chunks), [&](auto form) {
    using Form = decltype(form);
    if (chunks == 1)
      launch(grid, a.threads, shared, Form::template kernel<1>(), a, plan);
    else if (chunks == 2)
      launch(grid, a.threads, shared, Form::template kernel<2>(), a, plan);
    else
      launch(grid, a.threads, shared, Form::template kernel<kNormForwardChunksPerThread>(), a,
             plan);
  });
}

template <class Launch>
void dispatch_norm_forward(Launch&& launch, const NormForwardArgs& a) {
  const int64_t per_thread = forward_chunks_per_thread(a);
  if (per_thread > kNormForwardChunksPerThread) {
    launch(static_cast<unsigned>(a.rows), a.threads, 0, forward_reread_kernel, a);
    return;
  }
  const int chunks = forward_kernel_chunks(per_thread);
  const RingPlan plan = forward_ring_plan(a, per_thread);
  if (plan.stages > 0)
    dispatch_norm_forward_ring(launch, a, plan, chunks);
  else if (narrow_dtypes(a.x_dt, a.x_dt))
    dispatch_norm_forward_registers<4>(launch, a, chunks);
  else
    dispatch_norm_forward_registers<8>(launch, a, chunks);
}

template <int K, class Launch>
void dispatch_norm_backward_registers(Launch&& launch, const NormBackwardArgs& a,
                                      unsigned blocks) {
  const bool one_dtype = a.y_dt == a.x_or_y_dt && a.y_dt == a.x_dt;
  const RingPlan plan = backward_ring_plan(a);
  if (plan.stages > 0) {
    const unsigned grid = ring_grid(plan, a.sm_count, blocks);
    const auto shared = static_cast<size_t>(plan.shared_bytes());
    with_ring_form<BackwardRing>(a, a.x_dt, plain_backward(a, K), [&](auto form) {
      using Form = decltype(form);
      // K = 4: LayerNorm only (norm_backward_chunks_per_thread); no RMS/L2 instantiation.
      if constexpr (K <= kNormBackwardChunksPerThread || Form::kind == NormKind::Layer)
        launch(grid, a.threads, shared, Form::template kernel<K>(), a, plan);
    });
  } else if (one_dtype && a.x_dt == Dt::BF16) {
    launch(blocks, a.threads, 0, backward_register_kernel<Dt::BF16, K>, a);
  } else if (one_dtype && a.x_dt == Dt::F16) {
    launch(blocks, a.threads, 0, backward_register_kernel<Dt::F16, K>, a);
  } else if constexpr (K <= kNormBackwardChunksPerThread) {  // K = 4: one 16-bit dtype only
    launch(blocks, a.threads, 0, backward_register_kernel<Dt::F32, K>, a);
  }
}

template <class Launch>
void dispatch_norm_backward(Launch&& launch, const NormBackwardArgs& a) {
  const auto blocks = static_cast<unsigned>(norm_backward_blocks(a.rows, a.rows_per_block));
  const int chunks = backward_kernel_chunks(backward_chunks_per_thread(a));
  if (backward_in_registers(a) && chunks == 1)
    dispatch_norm_backward_registers<1>(launch, a, blocks);
  else if (backward_in_registers(a) && chunks == 2)
    dispatch_norm_backward_registers<2>(launch, a, blocks);
  else if (backward_in_registers(a))  // backward_four_chunks: LayerNorm, one 16-bit row dtype
    dispatch_norm_backward_registers<kNormBackwardWideChunksPerThread>(launch, a, blocks);
  else
    launch(blocks, a.threads, static_cast<size_t>(backward_shared_bytes(a)),
           backward_shared_kernel, a);
}

template <class Launch>
void dispatch_norm_weight_grad(Launch&& launch, const float* partial, int64_t blocks,
                               int64_t hidden, void* out, Dt out_dt, bool accumulate) {
  const int64_t grid = (hidden + kFinalizeColumns - 1) / kFinalizeColumns;
  launch(static_cast<unsigned>(grid), kFinalizeThreads, 0, weight_grad_kernel, partial, blocks,
         hidden, out, out_dt, accumulate);
}

}  // namespace
}  // namespace switchyard::liger

#endif
