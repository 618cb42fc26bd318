// A ring of shared-memory stages that bulk copies fill ahead of the threads reading them, one
// mbarrier per stage: the loads of several stages are in flight while the block works on an
// earlier one, whatever its registers. Used by te's streamed kernels (norm_device.cuh's row
// ring, ce_stream_kernels.cu). Included by .cu files only.
//
// Iteration i of a block uses stage i % stages, in phase (i / stages) & 1 of its barrier: its
// StagePosition (position(i), or one the thread advances itself).
// Protocol: thread 0 init()s, then the block passes a __syncthreads(); thread 0 arm()s
// iteration i (and issues its bulk copies) before any thread wait()s on it; a stage is armed
// again only once every reader is done with it: after a block barrier and a bulk_reuse_fence,
// or, with `released` counters, by the reader whose release() returns true.
#ifndef SWITCHYARD_TE_STAGE_RING_CUH
#define SWITCHYARD_TE_STAGE_RING_CUH

#include <switchyard/cuda/bulk_copy.cuh>

#include <cstdint>

namespace switchyard::te {

// Where an iteration sits in a ring: its stage and its phase's parity. With a run-time stage
// count each thread advances its own, so no iteration pays a division. One register: the stage
// in the low bits, the parity in the top bit.
class StagePosition {
 public:
  StagePosition() = default;
  __device__ StagePosition(uint32_t index, uint32_t parity) : bits_(index | parity << 31) {}

  __device__ uint32_t index() const { return bits_ & ~kParity; }
  __device__ uint32_t parity() const { return bits_ >> 31; }
  __device__ void advance(uint32_t stages) {
    bits_ = index() + 1 == stages ? (bits_ & kParity) ^ kParity : bits_ + 1;
  }

 private:
  static constexpr uint32_t kParity = 0x80000000u;
  uint32_t bits_ = 0;
};

struct StageRing {
  unsigned char* memory;  // stages x stage_bytes, 128-byte aligned
  uint64_t* full;         // per stage: its copies have landed
  uint32_t* released;     // per stage: readers done with it so far (NULL: the block syncs instead)
  uint32_t stages;
  uint32_t stage_bytes;

  // Thread 0 only.
  __device__ void init() const {
    for (uint32_t s = 0; s < stages; ++s) {
      cuda::mbarrier_init(&full[s], 1);
      if (released != nullptr) released[s] = 0;
    }
    cuda::bulk_barrier_init_fence();
  }

  // Iteration i's position: a division by `stages`, a multiply when the caller's count is a
  // compile-time constant (the streamed CE kernel); the others keep a StagePosition instead.
  __device__ StagePosition position(uint32_t iteration) const {
    return StagePosition(iteration % stages, (iteration / stages) & 1u);
  }

  __device__ unsigned char* stage(const StagePosition& at) const {
    return memory + at.index() * stage_bytes;
  }

  // Thread 0 only: the stage at `at` completes once `bytes` bytes (0: at once) of bulk copies
  // into it have landed; issue them after this.
  __device__ uint64_t* arm(const StagePosition& at, uint32_t bytes) const {
    uint64_t* bar = &full[at.index()];
    cuda::mbarrier_expect_bytes(bar, bytes);
    return bar;
  }

  // The stage at `at` once its copies have landed.
  __device__ const unsigned char* wait(const StagePosition& at) const {
    cuda::mbarrier_wait(&full[at.index()], at.parity());
    return stage(at);
  }

  // One of `readers` readers (a warp's lane 0, after __syncwarp) is done with the stage at
  // `at`. True for the last of them, which then owns the stage and must arm it again (with the
  // iteration `stages` later, if there is one): nobody waits for the slowest reader, it refills.
  __device__ bool release(const StagePosition& at, uint32_t readers) const {
    // acq_rel: this warp's reads of the stage happen before its count (release), and the last
    // reader sees every other reader's reads done (acquire) before it refills.
    uint32_t* count = &released[at.index()];
    uint32_t before;
    asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;"
                 : "=r"(before)
                 : "r"(cuda::shared_address(count))
                 : "memory");
    if (before + 1 != readers) return false;
    // The last reader: the count starts again for the stage's next use, whose readers can
    // only arrive after the refill this thread issues next.
    *count = 0;
    cuda::bulk_reuse_fence();
    return true;
  }
};

}  // namespace switchyard::te

#endif
