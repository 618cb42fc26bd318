// The second stage of dγ/dβ (Apex's cuComputeGradGammaBeta): per column, the per-chunk partial
// sums added in a fixed order — kFinalLanes interleaved runs in chunk order, then the runs in
// lane order — so the result depends on the problem only, never on the grid.
#include "kernels.cuh"
#include "launch.hpp"

namespace switchyard::apex {
namespace {

struct FinalParams {
  int64_t hidden = 0;
  int64_t chunks = 0;
  Dtype dtype = Dtype::F32;
  bool accumulate = false;
  const float* partial[2] = {nullptr, nullptr};  // dγ, dβ per-chunk sums
  void* out[2] = {nullptr, nullptr};             // dweight, dbias (NULL: not wanted)
};

// blockDim = (kFinalColumns, kFinalLanes); blockIdx.y: 0 = dγ, 1 = dβ.
__global__ void __launch_bounds__(kFinalColumns* kFinalLanes)
    final_sums_kernel(const FinalParams p) {
  __shared__ float lane_sums[kFinalLanes][kFinalColumns];
  const float* partial = p.partial[blockIdx.y];
  void* out = p.out[blockIdx.y];
  if (out == nullptr) return;  // the whole block: before any barrier
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kFinalColumns; base < p.hidden;
       base += static_cast<int64_t>(gridDim.x) * kFinalColumns) {
    const int64_t column = base + threadIdx.x;
    lane_sums[threadIdx.y][threadIdx.x] =
        column < p.hidden && partial != nullptr
            ? final_lane_sum(partial, p.hidden, p.chunks, column, threadIdx.y)
            : 0.0f;
    __syncthreads();
    if (threadIdx.y == 0 && column < p.hidden) {
      float lanes[kFinalLanes];
#pragma unroll
      for (int w = 0; w < kFinalLanes; ++w) lanes[w] = lane_sums[w][threadIdx.x];
      final_store(out, p.dtype, p.accumulate, column, lanes);
    }
    __syncthreads();  // lane_sums is rewritten by the next column tile
  }
}

}  // namespace

int launch_final_sums(const BackwardParams& params, const LaunchConfig& config) {
  FinalParams p;
  p.hidden = params.hidden;
  p.chunks = params.rows > 0 ? params.chunks : 0;
  p.dtype = params.grad_weight_dtype;
  p.accumulate = params.accumulate;
  p.partial[0] = params.partial_gamma;
  p.partial[1] = params.partial_beta;
  p.out[0] = params.dweight;
  p.out[1] = params.dbias;
  if (p.out[0] == nullptr && p.out[1] == nullptr) return cudaSuccess;
  constexpr int kThreads = kFinalColumns * kFinalLanes;
  const int64_t sms = std::max(1, config.sm_count - config.sm_margin);
  const int64_t tiles = ceil_div(p.hidden, kFinalColumns);
  // Two block rows (dγ, dβ): half the usual width each.
  const int64_t grid_x = std::max<int64_t>(
      1, std::min<int64_t>(tiles, sms * blocks_per_sm<final_sums_kernel>(kThreads) / 2));
  final_sums_kernel<<<dim3(static_cast<unsigned>(grid_x), 2), dim3(kFinalColumns, kFinalLanes), 0,
                      static_cast<cudaStream_t>(config.stream)>>>(p);
  return static_cast<int>(cudaGetLastError());
}

int kernel_image_status() {
  cudaFuncAttributes attributes{};
  const cudaError_t error = cudaFuncGetAttributes(&attributes, final_sums_kernel);
  if (error != cudaSuccess) cudaGetLastError();
  return static_cast<int>(error);
}

const char* cuda_error_name(int error) { return cudaGetErrorName(static_cast<cudaError_t>(error)); }
const char* cuda_error_string(int error) {
  return cudaGetErrorString(static_cast<cudaError_t>(error));
}

}  // namespace switchyard::apex
