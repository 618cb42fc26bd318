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

// Arrives on the cluster barrier without releasing anything (barrier.cluster.arrive defaults to
// .release, which holds the thread until its earlier stores, global ones included, are
// performed): a thread with something to publish calls release_shared_to_cluster first.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

// Releases this thread's earlier writes to its own block's shared memory, and only those, to
// the cluster: before a cluster_arrive_relaxed, they are visible to every thread that passes
// the cluster_wait. Its outstanding global stores are not waited for.
__device__ __forceinline__ void release_shared_to_cluster() {
  asm volatile("fence.release.sync_restrict::shared::cta.cluster;" ::: "memory");
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
