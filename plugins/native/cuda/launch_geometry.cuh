// Grid shapes of the native CUDA kernels. Results never depend on them: row kernels reduce a
// row in one block of a fixed size, element kernels compute each element alone.
#ifndef SWITCHYARD_NATIVE_CUDA_LAUNCH_GEOMETRY_CUH
#define SWITCHYARD_NATIVE_CUDA_LAUNCH_GEOMETRY_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace switchyard::native::cuda {

constexpr int kElementThreads = 256;       // element-wise kernels: a 2-D grid of columns x rows
constexpr int kPerRowThreads = 256;        // one thread per row
constexpr int64_t kMaxGridX = 1 << 20;     // kernels loop when there is more work
constexpr int64_t kMaxGridY = 65535;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Columns in x (blocks of kElementThreads), rows in y.
inline dim3 element_grid(int64_t rows, int64_t columns) {
  return dim3(static_cast<unsigned>(std::min(ceil_div(columns, kElementThreads), kMaxGridX)),
              static_cast<unsigned>(std::min(rows, kMaxGridY)));
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
#define SY_FOR_ROWS_Y(i, rows) for (int64_t i = blockIdx.y; i < (rows); i += gridDim.y)
#define SY_FOR_COLUMNS_X(j, columns)                                                  \
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;      \
       j < (columns); j += static_cast<int64_t>(gridDim.x) * blockDim.x)
#define SY_FOR_ROW_BLOCKS(i, rows) for (int64_t i = blockIdx.x; i < (rows); i += gridDim.x)
#define SY_FOR_ROW_THREADS(i, rows)                                                   \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;      \
       i < (rows); i += static_cast<int64_t>(gridDim.x) * blockDim.x)
#define SY_FOR_BLOCK_COLUMNS(j, columns) \
  for (int64_t j = threadIdx.x; j < (columns); j += blockDim.x)

}  // namespace switchyard::native::cuda

#endif
