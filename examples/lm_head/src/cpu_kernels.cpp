// The CPU implementation of the LM head's kernels: blocked loops, vectorisable by the
// compiler, split over threads by output so that every element has one writer.
#include "cpu_kernels.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace switchyard::lm_head {
namespace {

// Columns of the projection handled together: a [hidden, kColumnBlock] slice of W stays in
// the L2 cache while every row of the batch passes over it. Fixed, so that the order of the
// double sums in project_grad_input never depends on the thread count.
constexpr int64_t kColumnBlock = 256;
// Below this many multiply-adds per thread, starting a thread costs more than it saves.
constexpr int64_t kMinWorkPerThread = int64_t{1} << 20;
constexpr int64_t kMinElementsPerThread = int64_t{1} << 16;

int64_t blocks_of(int64_t columns) { return (columns + kColumnBlock - 1) / kColumnBlock; }

int64_t min_units(int64_t work_per_unit) {
  return std::max<int64_t>(1, kMinWorkPerThread / std::max<int64_t>(1, work_per_unit));
}

}  // namespace

CpuKernels::CpuKernels(int threads) : threads_(std::max(1, threads)) {}

void CpuKernels::gather_rows(const float* table, const int64_t* ids, int64_t n, int64_t width,
                             float* out) const {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out + i * width, table + ids[i] * width, sizeof(float) * width);
  }
}

void CpuKernels::scatter_add_rows(const float* rows, const int64_t* ids, int64_t n,
                                  int64_t width, float* table_grad) const {
  for (int64_t i = 0; i < n; ++i) {
    float* dst = table_grad + ids[i] * width;
    const float* src = rows + i * width;
    for (int64_t k = 0; k < width; ++k) dst[k] += src[k];
  }
}

// The projection kernels keep a tile of kTileRows × kTileCols outputs in registers while
// they walk the summed dimension, so each loaded value feeds several multiply-adds. The
// operand they stream is first packed tile by tile into a contiguous buffer: rows of the
// original are a whole vocabulary shard apart, which would make the tile's stripe collide in
// the cache. Every output is still the sum of its terms in index order starting from zero.
namespace {

constexpr int64_t kTileRows = 4;  // outputs sharing one broadcast operand
constexpr int64_t kTileCols = 8;  // contiguous outputs sharing one vector load

// Copies columns [j0, j0 + width) of the [depth, stride] matrix m into packed tiles:
// packed[(t * depth + k) * kTileCols + c] = m[k, j0 + t * kTileCols + c], zero past width.
void pack_columns(const float* m, int64_t stride, int64_t depth, int64_t j0, int64_t width,
                  std::vector<float>& packed) {
  const int64_t tiles = (width + kTileCols - 1) / kTileCols;
  packed.assign(static_cast<size_t>(tiles * depth * kTileCols), 0.0f);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t cols = std::min(kTileCols, width - t * kTileCols);
    for (int64_t k = 0; k < depth; ++k) {
      const float* src = m + k * stride + j0 + t * kTileCols;
      float* dst = packed.data() + (t * depth + k) * kTileCols;
      for (int64_t c = 0; c < cols; ++c) dst[c] = src[c];
    }
  }
}

// out[r][c] = Σ_k a[r * a_stride_r + k * a_stride_k] · tile[k * kTileCols + c] for r < Rows,
// c < cols (the tile is zero-padded to kTileCols columns), summed k = 0..depth-1 in order.
// Rows is a template argument so that the accumulators live in registers.
template <int64_t Rows>
void tile_product(const float* a, int64_t a_stride_r, int64_t a_stride_k, const float* tile,
                  int64_t depth, int64_t cols, float* out, int64_t out_stride) {
  float acc[Rows][kTileCols] = {};
  for (int64_t k = 0; k < depth; ++k) {
    const float* b = tile + k * kTileCols;
    for (int64_t r = 0; r < Rows; ++r) {
      const float scale = a[r * a_stride_r + k * a_stride_k];
      for (int64_t c = 0; c < kTileCols; ++c) acc[r][c] += scale * b[c];
    }
  }
  for (int64_t r = 0; r < Rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[r * out_stride + c] = acc[r][c];
  }
}

void tile_product(const float* a, int64_t a_stride_r, int64_t a_stride_k, const float* tile,
                  int64_t depth, int64_t rows, int64_t cols, float* out, int64_t out_stride) {
  static_assert(kTileRows == 4, "the dispatch below covers 1..4 rows");
  switch (rows) {
    case 4: return tile_product<4>(a, a_stride_r, a_stride_k, tile, depth, cols, out, out_stride);
    case 3: return tile_product<3>(a, a_stride_r, a_stride_k, tile, depth, cols, out, out_stride);
    case 2: return tile_product<2>(a, a_stride_r, a_stride_k, tile, depth, cols, out, out_stride);
    default: return tile_product<1>(a, a_stride_r, a_stride_k, tile, depth, cols, out, out_stride);
  }
}

}  // namespace

void CpuKernels::project(const float* y, const float* w, int64_t n, int64_t h, int64_t vp,
                         float* logits) const {
  // logits[row, j] = Σ_k y[row, k] · w[k, j]. y is regrouped so that a row tile's values
  // for one k are adjacent (as they are for project_grad_weight's operand): with them a
  // row apart, the compiler vectorises over k instead and spills the accumulators.
  const int64_t row_tiles = (n + kTileRows - 1) / kTileRows;
  std::vector<float> y_tiles(static_cast<size_t>(row_tiles * h * kTileRows), 0.0f);
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t k = 0; k < h; ++k) {
      y_tiles[((row / kTileRows) * h + k) * kTileRows + row % kTileRows] = y[row * h + k];
    }
  }
  const float* y_packed = y_tiles.data();
  parallel_for(blocks_of(vp), threads_, min_units(n * h * kColumnBlock),
               [=](int64_t first_block, int64_t last_block) {
                 std::vector<float> packed;
                 for (int64_t b = first_block; b < last_block; ++b) {
                   const int64_t j0 = b * kColumnBlock;
                   const int64_t width = std::min(kColumnBlock, vp - j0);
                   pack_columns(w, vp, h, j0, width, packed);
                   for (int64_t t = 0; t * kTileCols < width; ++t) {
                     const float* tile = packed.data() + t * h * kTileCols;
                     const int64_t j = j0 + t * kTileCols;
                     for (int64_t rt = 0; rt < row_tiles; ++rt) {
                       const int64_t row = rt * kTileRows;
                       tile_product(y_packed + rt * h * kTileRows, 1, kTileRows, tile, h,
                                    std::min(kTileRows, n - row),
                                    std::min(kTileCols, j0 + width - j), logits + row * vp + j,
                                    vp);
                     }
                   }
                 }
               });
}

void CpuKernels::project_grad_input(const float* dlogits, const float* w, int64_t n, int64_t h,
                                    int64_t vp, double* dy) const {
  // dy[row, k] = Σ_j dlogits[row, j] · w[k, j], in double: per column block, a sum over the
  // block's columns in order, added to dy block after block. Both operands are packed, in
  // double, so that a tile's 4 rows (or 4 k) for one column are adjacent.
  constexpr int64_t kTile = 4;
  parallel_for(n, threads_, min_units(h * vp), [=](int64_t first_row, int64_t last_row) {
    std::fill(dy + first_row * h, dy + last_row * h, 0.0);
    const int64_t rows = last_row - first_row;
    const int64_t row_tiles = (rows + kTile - 1) / kTile, k_tiles = (h + kTile - 1) / kTile;
    std::vector<double> g_packed, w_packed;
    for (int64_t b = 0; b < blocks_of(vp); ++b) {
      const int64_t j0 = b * kColumnBlock;
      const int64_t width = std::min(kColumnBlock, vp - j0);
      // packed[(tile * width + j) * kTile + lane] = m[tile * kTile + lane, j0 + j], zero padded
      auto pack = [&](const float* m, int64_t first, int64_t count, int64_t tiles,
                      std::vector<double>& packed) {
        packed.assign(static_cast<size_t>(tiles * width * kTile), 0.0);
        for (int64_t i = 0; i < count; ++i) {
          const float* src = m + (first + i) * vp + j0;
          double* dst = packed.data() + (i / kTile) * width * kTile + i % kTile;
          for (int64_t j = 0; j < width; ++j) dst[j * kTile] = src[j];
        }
      };
      pack(dlogits, first_row, rows, row_tiles, g_packed);
      pack(w, 0, h, k_tiles, w_packed);
      for (int64_t rt = 0; rt < row_tiles; ++rt) {
        const double* g = g_packed.data() + rt * width * kTile;
        for (int64_t kt = 0; kt < k_tiles; ++kt) {
          const double* wk = w_packed.data() + kt * width * kTile;
          double acc[kTile][kTile] = {};
          for (int64_t j = 0; j < width; ++j) {
            for (int64_t r = 0; r < kTile; ++r) {
              for (int64_t c = 0; c < kTile; ++c) acc[r][c] += g[j * kTile + r] * wk[j * kTile + c];
            }
          }
          for (int64_t r = 0; r < kTile && rt * kTile + r < rows; ++r) {
            double* out = dy + (first_row + rt * kTile + r) * h + kt * kTile;
            for (int64_t c = 0; c < kTile && kt * kTile + c < h; ++c) out[c] += acc[r][c];
          }
        }
      }
    }
  });
}

void CpuKernels::project_grad_weight(const float* y, const float* dlogits, int64_t n, int64_t h,
                                     int64_t vp, float* dw) const {
  // dw[k, j] = Σ_row y[row, k] · dlogits[row, j]
  parallel_for(blocks_of(vp), threads_, min_units(n * h * kColumnBlock),
               [=](int64_t first_block, int64_t last_block) {
                 std::vector<float> packed;
                 for (int64_t b = first_block; b < last_block; ++b) {
                   const int64_t j0 = b * kColumnBlock;
                   const int64_t width = std::min(kColumnBlock, vp - j0);
                   pack_columns(dlogits, vp, n, j0, width, packed);
                   for (int64_t t = 0; t * kTileCols < width; ++t) {
                     const float* tile = packed.data() + t * n * kTileCols;
                     const int64_t j = j0 + t * kTileCols;
                     for (int64_t k = 0; k < h; k += kTileRows) {
                       tile_product(y + k, 1, h, tile, n, std::min(kTileRows, h - k),
                                    std::min(kTileCols, j0 + width - j), dw + k * vp + j, vp);
                     }
                   }
                 }
               });
}

void CpuKernels::fill(float* out, int64_t count, float value) const {
  std::fill(out, out + count, value);
}

void CpuKernels::to_float(const double* in, int64_t count, float* out) const {
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(in[i]);
}

double CpuKernels::mean(const float* values, int64_t count) const {
  if (count <= 0) return 0.0;
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += values[i];
  return sum / static_cast<double>(count);
}

void CpuKernels::sgd_step(float* param, const float* grad, int64_t count, float lr) const {
  parallel_for(count, threads_, kMinElementsPerThread, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) param[i] -= lr * grad[i];
  });
}

void CpuKernels::adam_step(float* param, const float* grad, float* m, float* v, int64_t count,
                           const AdamHyper& hyper) const {
  const double t = static_cast<double>(hyper.step);
  const float m_scale = static_cast<float>(1.0 / (1.0 - std::pow(hyper.beta1, t)));
  const float v_scale = static_cast<float>(1.0 / (1.0 - std::pow(hyper.beta2, t)));
  const float b1 = hyper.beta1, b2 = hyper.beta2, lr = hyper.lr, eps = hyper.eps;
  parallel_for(count, threads_, kMinElementsPerThread, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float g = grad[i];
      m[i] = b1 * m[i] + (1.0f - b1) * g;
      v[i] = b2 * v[i] + (1.0f - b2) * g * g;
      const float m_hat = m[i] * m_scale;
      const float v_hat = v[i] * v_scale;
      param[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  });
}

}  // namespace switchyard::lm_head
