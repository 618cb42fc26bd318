// The primitives of a shared-memory ring of row stages filled by bulk copies (sm_90's copy
// engine, <switchyard/cuda/bulk_copy.cuh>): one thread arms a stage's barrier with the bytes
// it expects and issues the copies; every thread waits for the stage's phase before reading it.
// The copy engine, not registers, keeps the loads in flight, so a block can have several rows
// outstanding while it reduces the current one.
//
// For the host build (tests/liger's block emulator) the copies are memcpy at issue time and the
// barrier is emulated with its phase and byte accounting; a wait for a phase that has not
// completed, a copy the barrier did not expect, or a misaligned copy aborts with a message,
// because on the GPU each of them would hang or fault.
#ifndef SWITCHYARD_LIGER_KERNELS_ROW_RING_CUH
#define SWITCHYARD_LIGER_KERNELS_ROW_RING_CUH

#include <cstdint>

#if defined(__CUDACC__)
#include <switchyard/cuda/bulk_copy.cuh>
#else
#include <cstdio>
#include <cstdlib>
#include <cstring>
#endif

namespace switchyard::liger::device {

#if defined(__CUDACC__)

// One arrival per phase: the thread that issues the stage's copies.
__device__ __forceinline__ void ring_barrier_init(uint64_t* bar) {
  switchyard::cuda::mbarrier_init(bar, 1);
}
__device__ __forceinline__ void ring_init_fence() { switchyard::cuda::bulk_barrier_init_fence(); }
__device__ __forceinline__ void ring_reuse_fence() { switchyard::cuda::bulk_reuse_fence(); }
__device__ __forceinline__ void ring_expect(uint64_t* bar, uint32_t bytes) {
  switchyard::cuda::mbarrier_expect_bytes(bar, bytes);
}
__device__ __forceinline__ void ring_copy(void* dst, const void* src, uint32_t bytes,
                                          uint64_t* bar) {
  switchyard::cuda::bulk_load(dst, src, bytes, bar);
}
__device__ __forceinline__ void ring_wait(uint64_t* bar, uint32_t parity) {
  switchyard::cuda::mbarrier_wait(bar, parity);
}

#else  // host emulation: the barrier word holds {completed phases, pending arrival, pending bytes}

namespace ring_emulation {
[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "row ring: %s (on the GPU this would hang or fault)\n", what);
  std::abort();
}
struct State {
  uint32_t phases;   // completed phases
  uint16_t pending;  // arrivals still expected in the current phase (0 or 1)
  int32_t bytes;     // bytes announced but not yet copied
};
inline State load(const uint64_t* bar) {
  State s;
  s.phases = static_cast<uint32_t>(*bar >> 32);
  s.pending = static_cast<uint16_t>((*bar >> 31) & 1u);
  s.bytes = static_cast<int32_t>(*bar & 0x7fffffffu);
  return s;
}
inline void store(uint64_t* bar, State s) {
  if (s.bytes < 0) fail("more bytes copied than the barrier expected");
  if (s.pending == 0 && s.bytes == 0) {  // the phase completes
    ++s.phases;
    s.pending = 1;
  }
  *bar = (static_cast<uint64_t>(s.phases) << 32) | (static_cast<uint64_t>(s.pending) << 31) |
         static_cast<uint64_t>(s.bytes);
}
}  // namespace ring_emulation

inline void ring_barrier_init(uint64_t* bar) { *bar = uint64_t{1} << 31; }
inline void ring_init_fence() {}
inline void ring_reuse_fence() {}
inline void ring_expect(uint64_t* bar, uint32_t bytes) {
  ring_emulation::State s = ring_emulation::load(bar);
  if (s.pending == 0) ring_emulation::fail("a second arrival in one phase");
  s.pending = 0;
  s.bytes += static_cast<int32_t>(bytes);
  ring_emulation::store(bar, s);
}
inline void ring_copy(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  if (bytes == 0 || bytes % 16 != 0 || reinterpret_cast<uintptr_t>(dst) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(src) % 16 != 0)
    ring_emulation::fail("a bulk copy that is not 16-byte aligned");
  std::memcpy(dst, src, bytes);
  ring_emulation::State s = ring_emulation::load(bar);
  if (s.pending != 0) ring_emulation::fail("a copy issued before its bytes were announced");
  s.bytes -= static_cast<int32_t>(bytes);
  ring_emulation::store(bar, s);
}
inline void ring_wait(uint64_t* bar, uint32_t parity) {
  // The phase of this parity has completed when the current phase has the other parity.
  if ((ring_emulation::load(bar).phases & 1u) == (parity & 1u))
    ring_emulation::fail("a wait for a stage that was never filled");
}

#endif

}  // namespace switchyard::liger::device

#endif
