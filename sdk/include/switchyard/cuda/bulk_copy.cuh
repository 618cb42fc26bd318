// Hopper (sm_90+) bulk copies from global into shared memory, completed on an mbarrier, for
// plugins whose kernels stream rows through a shared-memory ring: the copy engine keeps the
// loads in flight, so a kernel's memory-level parallelism no longer depends on how many
// registers its threads hold. Header-only and opt-in: include it from .cu files of a plugin
// built for sm_90 or newer; the SDK itself stays free of CUDA.
//
// Contract of every function: `bar` and the shared-memory pointers point into the calling
// block's shared memory; a bulk copy needs 16-byte aligned source and destination and a size
// that is a non-zero multiple of 16 (`bulk_copy_ok` says whether a row qualifies).
#ifndef SWITCHYARD_CUDA_BULK_COPY_CUH
#define SWITCHYARD_CUDA_BULK_COPY_CUH

#include <cstdint>

namespace switchyard::cuda {

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One thread initialises a barrier expecting `arrivals` arrivals per phase; the block must
// then pass bulk_barrier_init_fence() and a __syncthreads() before anyone uses it.
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals)
               : "memory");
}

// Makes the initialised barriers visible to the copy engine (the async proxy).
__device__ __forceinline__ void bulk_barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Orders this thread's earlier ordinary accesses of shared memory before later bulk copies
// into it: issue it (after the block barrier that ends the readers' use of a buffer) before
// re-filling the buffer.
__device__ __forceinline__ void bulk_reuse_fence() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Arrives on `bar` and announces `bytes` more bytes that bulk copies will complete on it in
// this phase.
__device__ __forceinline__ void mbarrier_expect_bytes(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
               "r"(bytes)
               : "memory");
}

// Copies `bytes` bytes from global `src` into shared `dst`; completion is counted on `bar`.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          shared_address(dst)),
      "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(shared_address(bar))
      : "memory");
}

// Waits until the phase of `bar` with the given parity (0, 1, 0, ... per use) has completed;
// the bytes of its bulk copies are then visible to the waiting thread.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(shared_address(bar)), "r"(parity)
        : "memory");
  } while (done == 0);
}

// Whether a row at `p` of `bytes` bytes can be bulk-copied.
__host__ __device__ inline bool bulk_copy_ok(const void* p, int64_t bytes) {
  return bytes > 0 && bytes % 16 == 0 && (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

}  // namespace switchyard::cuda

#endif
