// sm_90 thread-block cluster primitives for te's slice kernels: the cluster barrier and reads
// of another block's shared memory (distributed shared memory). Included by .cu files only.
//
// Every thread of every block of the cluster must execute each barrier (arrive, then wait),
// in uniform control flow; a wait returns once all of them have arrived, so a kernel whose
// paths all arrive the same number of times cannot deadlock on it.
#ifndef SWITCHYARD_TE_CE_CLUSTER_CUH
#define SWITCHYARD_TE_CE_CLUSTER_CUH

#include <switchyard/cuda/bulk_copy.cuh>

#include <cstdint>

namespace switchyard::te {

// Arrives on the cluster barrier; this thread's earlier memory accesses (shared memory
// included) are released to the threads that wait on it.
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

// Waits until every thread of the cluster has arrived (acquiring what they released).
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The address, in the cluster's shared window, of the variable at `p` (this block's shared
// memory) in the block of cluster rank `rank`.
__device__ __forceinline__ uint32_t cluster_address(const void* p, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(out)
               : "r"(cuda::shared_address(p)), "r"(rank));
  return out;
}

__device__ __forceinline__ float cluster_load_f32(uint32_t address) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(address) : "memory");
  return v;
}

__device__ __forceinline__ int64_t cluster_load_s64(uint32_t address) {
  int64_t v;
  asm volatile("ld.shared::cluster.s64 %0, [%1];" : "=l"(v) : "r"(address) : "memory");
  return v;
}

}  // namespace switchyard::te

#endif
