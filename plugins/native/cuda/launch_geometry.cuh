// Grid shapes of the native CUDA kernels (the block shapes and tiles are in chunk_geometry.hpp).
// Results never depend on the grid: row kernels reduce a row in one block of a size fixed by the
// row length, element kernels compute each element alone, and every kernel loops when the grid
// is capped.
#ifndef SWITCHYARD_NATIVE_CUDA_LAUNCH_GEOMETRY_CUH
#define SWITCHYARD_NATIVE_CUDA_LAUNCH_GEOMETRY_CUH

#include "chunk_geometry.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace switchyard::native::cuda {

constexpr int kPerRowThreads = 256;     // one thread per row
constexpr int64_t kMaxGridX = 1 << 20;  // kernels loop when there is more work
constexpr int64_t kMaxGridY = 65535;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One block per tile (chunk_geometry.hpp).
inline dim3 tile_grid(const TileSpace& s) {
  return dim3(static_cast<unsigned>(std::min(s.tiles, kMaxGridX)));
}

// One block per row.
inline dim3 row_grid(int64_t rows) {
  return dim3(static_cast<unsigned>(std::min(rows, kMaxGridX)));
}

// One thread per row.
inline dim3 per_row_grid(int64_t rows) {
  return dim3(static_cast<unsigned>(std::min(ceil_div(rows, kPerRowThreads), kMaxGridX)));
}

// Loop bounds inside the kernels.
#define SY_FOR_ROW_BLOCKS(i, rows) for (int64_t i = blockIdx.x; i < (rows); i += gridDim.x)
#define SY_FOR_ROW_THREADS(i, rows)                                                   \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;      \
       i < (rows); i += static_cast<int64_t>(gridDim.x) * blockDim.x)

}  // namespace switchyard::native::cuda

#endif
