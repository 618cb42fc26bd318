// A plain write of twice the L2 evicts only what the L2 holds at normal priority. Lines that a
// kernel loaded with an evict_last policy (createpolicy, .L2::cache_hint) outlive it, so a
// backend that loads its rows so would meet its previous repetition's rows in L2 (sixteenth
// and seventeenth sessions: te's norm rows loaded evict_last measured 2-3 % faster under the
// plain flush, and no faster once each row's lines were set back to evict_normal after use).
// Written at evict_last priority, the buffer displaces those lines; set back to evict_normal,
// its own lines then leave the L2 as a plain flush does: full of the buffer's dirty lines at
// normal priority.
#include "l2_flush.hpp"

namespace switchyard::bench {
namespace {

__global__ void write_evict_last_kernel(uint4* buffer, int64_t count, uint32_t value) {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step)
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %1, %1, %1}, %2;" ::"l"(buffer + i),
                 "r"(value), "l"(policy)
                 : "memory");
}

__global__ void demote_lines_kernel(const char* buffer, int64_t lines) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < lines; i += step)
    asm volatile("applypriority.global.L2::evict_normal [%0], 128;" ::"l"(buffer + i * 128) : "memory");
}

}  // namespace

cudaError_t launch_evict_last_flush(cudaStream_t stream, void* buffer, int64_t bytes, uint32_t value,
                                    int multiprocessors) {
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(multiprocessors > 0 ? multiprocessors * 8 : 1024);
  write_evict_last_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint4*>(buffer), bytes / 16, value);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  demote_lines_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const char*>(buffer), bytes / 128);
  return cudaGetLastError();
}

}  // namespace switchyard::bench
