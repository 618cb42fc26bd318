// The cross-entropy kernels: one per eager op of Megatron's vocab-parallel cross entropy,
// deliberately unfused (this is the baseline the fused backends are measured against), each a
// plain bandwidth-bound kernel in the manner of PyTorch's own:
//  - element-wise ops: a block per tile of kTileChunks chunks of one row, every thread loading
//    kElementUnroll chunks (16-byte accesses where the row is aligned) before it stores any;
//  - row reductions (max, sums): one block of kRowThreads per row, kRowUnroll chunks in flight
//    per thread, the thread's chunks in column order, then a fixed tree; so a row's results are
//    bit-identical from run to run and do not depend on the other rows of the batch.
// The fp32 copy z has whole-chunk rows (z_stride = padded_columns(vp)): its accesses are always
// 16-byte ones; columns >= vp are scratch that reductions skip.
#include "ce_kernels.hpp"
#include "chunk_io.cuh"
#include "device_math.cuh"
#include "launch_geometry.cuh"

namespace switchyard::native::cuda {
namespace {

template <class F>
cudaError_t with_type(Dtype type, F&& f) {
  switch (type) {
    case Dtype::F32: return f(float{});
    case Dtype::BF16: return f(__nv_bfloat16{});
    default: return f(__half{});
  }
}

// The tile a block works on: a row and the first chunk of this thread.
struct Tile {
  int64_t row;
  int64_t chunk;  // this thread's first chunk; its others follow every kElementThreads
};
__device__ __forceinline__ Tile tile_of(const TileSpace& s, int64_t tile) {
  const int64_t row = tile / s.tiles_per_row;
  const int64_t first = (tile - row * s.tiles_per_row) * kTileChunks;
  return Tile{row, first + threadIdx.x};
}
#define SY_FOR_TILES(tile, space) \
  for (int64_t tile = blockIdx.x; tile < (space).tiles; tile += gridDim.x)

__global__ void check_labels_kernel(const void* labels, int64_t rows, LabelRule rule,
                                    unsigned long long* first_bad) {
  SY_FOR_ROW_THREADS(i, rows) {
    const int64_t t = load_label(labels, rule.labels64, i);
    if (is_ignored(rule, t) || (t >= 0 && t < rule.vocab_size)) continue;
    atomicMin(first_bad, static_cast<unsigned long long>(i));
  }
}

// z = logits.float(); columns >= vp of z become 0.
template <class T>
__global__ void __launch_bounds__(kElementThreads, kElementBlocksPerSm)
    upcast_kernel(const T* logits, int64_t row_stride, bool vector, float* z, int64_t z_stride,
                  TileSpace s) {
  SY_FOR_TILES(tile, s) {
    const Tile at = tile_of(s, tile);
    const T* src = logits + at.row * row_stride;
    float* dst = z + at.row * z_stride;
    float v[kElementUnroll][kChunk];
#pragma unroll
    for (int u = 0; u < kElementUnroll; ++u) {
      const int64_t c = at.chunk + u * kElementThreads;
      if (c < s.chunks) load_chunk(src, c, s.columns, vector, v[u]);
    }
#pragma unroll
    for (int u = 0; u < kElementUnroll; ++u) {
      const int64_t c = at.chunk + u * kElementThreads;
      if (c < s.chunks) store8(dst + c * kChunk, v[u]);
    }
  }
}

// In place over z (columns >= vp included: scratch): v = op(v, row_value[row]), the row's
// value read once per tile (NULL: 0).
template <class Op>
__device__ __forceinline__ void map_z(float* z, int64_t z_stride, const float* row_value,
                                      const TileSpace& s, Op op) {
  SY_FOR_TILES(tile, s) {
    const Tile at = tile_of(s, tile);
    float* row = z + at.row * z_stride;
    const float value = row_value != nullptr ? row_value[at.row] : 0.0f;
    float v[kElementUnroll][kChunk];
#pragma unroll
    for (int u = 0; u < kElementUnroll; ++u) {
      const int64_t c = at.chunk + u * kElementThreads;
      if (c < s.chunks) load8(row + c * kChunk, v[u]);
    }
#pragma unroll
    for (int u = 0; u < kElementUnroll; ++u) {
      const int64_t c = at.chunk + u * kElementThreads;
      if (c >= s.chunks) continue;
#pragma unroll
      for (int e = 0; e < kChunk; ++e) v[u][e] = op(v[u][e], value);
      store8(row + c * kChunk, v[u]);
    }
  }
}

__global__ void __launch_bounds__(kElementThreads, kElementBlocksPerSm)
    subtract_max_kernel(float* z, int64_t z_stride, const float* row_max, TileSpace s) {
  map_z(z, z_stride, row_max, s, [](float v, float max) { return v - max; });
}

__global__ void __launch_bounds__(kElementThreads, kElementBlocksPerSm)
    exp_kernel(float* z, int64_t z_stride, TileSpace s) {
  map_z(z, z_stride, nullptr, s, [](float v, float) { return expf(v); });
}

// Chunks t, t + T, ... of row `row` (T = kRowThreads), kRowUnroll of them loaded at a time;
// visit(column, value) sees this thread's columns < vp in increasing order.
template <class Visit>
__device__ __forceinline__ void for_row_columns(const float* row, int64_t vp, Visit visit) {
  const int64_t chunks = chunks_of(vp);
  for (int64_t base = threadIdx.x; base < chunks; base += int64_t{kRowThreads} * kRowUnroll) {
    float v[kRowUnroll][kChunk];
#pragma unroll
    for (int u = 0; u < kRowUnroll; ++u) {
      const int64_t c = base + u * kRowThreads;
      if (c < chunks) load8(row + c * kChunk, v[u]);
    }
#pragma unroll
    for (int u = 0; u < kRowUnroll; ++u) {
      const int64_t c = base + u * kRowThreads;
      if (c >= chunks) continue;
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        const int64_t j = c * kChunk + e;
        if (j < vp) visit(j, v[u][e]);
      }
    }
  }
}

__global__ void __launch_bounds__(kRowThreads)
    row_max_kernel(const float* z, int64_t rows, int64_t vp, int64_t z_stride, float* row_max,
                   int64_t* row_argmax) {
  __shared__ float values[kRowThreads / kWarp];
  __shared__ int64_t indices[kRowThreads / kWarp];
  SY_FOR_ROW_BLOCKS(i, rows) {
    MaxAt m{-INFINITY, INT64_MAX};
    for_row_columns(z + i * z_stride, vp, [&m](int64_t j, float v) {
      if (beats(v, j, m.value, m.index)) m = MaxAt{v, j};
    });
    m = block_max_at(m, values, indices);
    if (threadIdx.x == 0) {
      row_max[i] = m.value;
      row_argmax[i] = m.index;
    }
  }
}

__global__ void __launch_bounds__(kRowThreads)
    row_sum_kernel(const float* z, int64_t rows, int64_t vp, int64_t z_stride, float* sums) {
  __shared__ double partial[kRowThreads / kWarp];
  SY_FOR_ROW_BLOCKS(i, rows) {
    double sum = 0.0;
    for_row_columns(z + i * z_stride, vp,
                    [&sum](int64_t, float v) { sum += static_cast<double>(v); });
    sum = block_sum(sum, partial);
    if (threadIdx.x == 0) sums[i] = static_cast<float>(sum);
  }
}

__global__ void argmax_candidates_kernel(const float* local_max, const float* global_max,
                                         int64_t vocab_start, int64_t rows, int64_t* argmax) {
  SY_FOR_ROW_THREADS(i, rows) {
    const float local = local_max[i];
    const float global = global_max[i];
    const bool holds_max = local == global || (isnan(local) && isnan(global));
    argmax[i] = holds_max ? vocab_start + argmax[i] : INT64_MAX;
  }
}

__global__ void gather_target_kernel(const float* z, int64_t rows, int64_t z_stride,
                                     const void* labels, LabelRule rule, float* target) {
  SY_FOR_ROW_THREADS(i, rows) {
    const int64_t t = load_label(labels, rule.labels64, i);
    const int64_t column = is_ignored(rule, t) ? -1 : local_column(rule, t);
    target[i] = column >= 0 ? z[i * z_stride + column] : 0.0f;
  }
}

__global__ void loss_kernel(LossArgs a) {
  const double s = a.smoothing;
  const double vocab = static_cast<double>(a.rule.vocab_size);
  SY_FOR_ROW_THREADS(i, a.rows) {
    const double log_sum = log(static_cast<double>(a.sum_exp[i]));
    a.lse[i] = static_cast<float>(static_cast<double>(a.global_max[i]) + log_sum);
    const int64_t t = load_label(a.labels, a.rule.labels64, i);
    if (is_ignored(a.rule, t)) {
      a.loss[i] = 0.0f;
    } else {
      const double ce = log_sum - static_cast<double>(a.target[i]);
      const double smooth =
          s != 0.0 ? log_sum - static_cast<double>(a.sum_shifted[i]) / vocab : 0.0;
      a.loss[i] = static_cast<float>((1.0 - s) * ce + s * smooth);
    }
    if (a.argmax_out != nullptr) a.argmax_out[i] = a.argmax_in[i];
  }
}

// What a row's gradient subtracts: q = (1 - s) + s / V at the target column, s / V elsewhere;
// an ignored row's gradient is 0.
struct RowTarget {
  bool ignored;
  int64_t column;  // local target column, -1 when another rank (or none) owns it
  float q_target;
  float q_other;
};
__device__ __forceinline__ RowTarget row_target(const void* labels, const LabelRule& rule,
                                                const Smoothing& smoothing, int64_t i) {
  const int64_t t = load_label(labels, rule.labels64, i);
  const bool ignored = is_ignored(rule, t);
  return RowTarget{ignored, ignored ? -1 : local_column(rule, t), smoothing.q_target,
                   smoothing.q_other};
}

// v[k] = scale * (p[k] - q) over chunk c, in place (p in v).
__device__ __forceinline__ void grad_chunk(const RowTarget& r, float scale, int64_t c,
                                           float (&v)[kChunk]) {
  const int64_t offset = r.column - c * kChunk;  // the target's place in this chunk, if any
  const int target = offset >= 0 && offset < kChunk ? static_cast<int>(offset) : -1;
#pragma unroll
  for (int k = 0; k < kChunk; ++k)
    v[k] = r.ignored ? 0.0f : scale * (v[k] - (k == target ? r.q_target : r.q_other));
}

// Gradient from the exponentials of the forward: p = exp(z - max) / sum.
template <class G>
__global__ void __launch_bounds__(kElementThreads, kElementBlocksPerSm)
    forward_grad_kernel(ForwardGradArgs a, G* grad, TileSpace s) {
  SY_FOR_TILES(tile, s) {
    const Tile at = tile_of(s, tile);
    const int64_t i = at.row;
    const RowTarget target = row_target(a.labels, a.rule, a.smoothing, i);
    const float scale = a.grad_scale[i];
    const float inverse_sum = static_cast<float>(1.0 / static_cast<double>(a.sum_exp[i]));
    const float* e = a.exp_z + i * a.z_stride;
    G* out = grad + i * a.grad.row_stride;
    float v[kElementUnroll][kChunk];
#pragma unroll
    for (int u = 0; u < kElementUnroll; ++u) {
      const int64_t c = at.chunk + u * kElementThreads;
      if (c < s.chunks) load8(e + c * kChunk, v[u]);
    }
#pragma unroll
    for (int u = 0; u < kElementUnroll; ++u) {
      const int64_t c = at.chunk + u * kElementThreads;
      if (c >= s.chunks) continue;
#pragma unroll
      for (int k = 0; k < kChunk; ++k) v[u][k] *= inverse_sum;
      grad_chunk(target, scale, c, v[u]);
      store_chunk(out, c, s.columns, a.grad.vector_rows, v[u]);
    }
  }
}

// p = exp(z - lse) with z - lse split exactly into hi + lo (TwoSum), so the exponent sees no
// rounding of the difference: exp(hi) * (1 + lo) = exp(z - lse) (1 + O(lo^2)).
__device__ __forceinline__ float softmax_of(float z, float lse) {
  const float hi = z - lse;
  const float z_part = hi + lse;
  const float lse_part = hi - z_part;
  const float lo = (z - z_part) - (lse + lse_part);
  const float e = expf(hi);
  return isfinite(hi) ? fmaf(e, lo, e) : e;  // lo is NaN when hi is infinite
}

// No __restrict__: grad may be the logits themselves (a thread loads all its chunks before it
// stores any, and no other thread touches them).
template <class T, class G>
__global__ void __launch_bounds__(kElementThreads, kElementBlocksPerSm)
    backward_kernel(BackwardArgs a, const T* logits, G* grad, TileSpace s) {
  SY_FOR_TILES(tile, s) {
    const Tile at = tile_of(s, tile);
    const int64_t i = at.row;
    const RowTarget target = row_target(a.labels, a.rule, a.smoothing, i);
    const float scale = a.grad_loss[i];
    const float lse = a.lse[i];
    const T* in = logits + i * a.logits.row_stride;
    G* out = grad + i * a.grad.row_stride;
    float v[kElementUnroll][kChunk];
#pragma unroll
    for (int u = 0; u < kElementUnroll; ++u) {
      const int64_t c = at.chunk + u * kElementThreads;
      if (c < s.chunks) load_chunk(in, c, s.columns, a.logits.vector_rows, v[u]);
    }
#pragma unroll
    for (int u = 0; u < kElementUnroll; ++u) {
      const int64_t c = at.chunk + u * kElementThreads;
      if (c >= s.chunks) continue;
#pragma unroll
      for (int k = 0; k < kChunk; ++k) v[u][k] = softmax_of(v[u][k], lse);
      grad_chunk(target, scale, c, v[u]);
      store_chunk(out, c, s.columns, a.grad.vector_rows, v[u]);
    }
  }
}

bool nothing_to_do(int64_t rows, int64_t columns = 1) { return rows <= 0 || columns <= 0; }

}  // namespace

cudaError_t launch_check_labels(const void* labels, int64_t rows, const LabelRule& rule,
                                unsigned long long* first_bad, cudaStream_t stream) {
  if (nothing_to_do(rows)) return cudaSuccess;
  check_labels_kernel<<<per_row_grid(rows), kPerRowThreads, 0, stream>>>(labels, rows, rule,
                                                                         first_bad);
  return cudaGetLastError();
}

cudaError_t launch_upcast(const Matrix& logits, int64_t rows, int64_t vp, float* z,
                          int64_t z_stride, cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  const TileSpace s = tile_space(rows, vp);
  return with_type(logits.type, [&](auto tag) {
    using T = decltype(tag);
    upcast_kernel<T><<<tile_grid(s), kElementThreads, 0, stream>>>(
        static_cast<const T*>(logits.data), logits.row_stride, logits.vector_rows, z, z_stride,
        s);
    return cudaGetLastError();
  });
}

cudaError_t launch_row_max(const float* z, int64_t rows, int64_t vp, int64_t z_stride,
                           float* row_max, int64_t* row_argmax, cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  row_max_kernel<<<row_grid(rows), kRowThreads, 0, stream>>>(z, rows, vp, z_stride, row_max,
                                                             row_argmax);
  return cudaGetLastError();
}

cudaError_t launch_argmax_candidates(const float* local_max, const float* global_max,
                                     int64_t vocab_start, int64_t rows, int64_t* argmax,
                                     cudaStream_t stream) {
  if (nothing_to_do(rows)) return cudaSuccess;
  argmax_candidates_kernel<<<per_row_grid(rows), kPerRowThreads, 0, stream>>>(
      local_max, global_max, vocab_start, rows, argmax);
  return cudaGetLastError();
}

cudaError_t launch_subtract_max(float* z, int64_t rows, int64_t vp, int64_t z_stride,
                                const float* row_max, cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  const TileSpace s = tile_space(rows, vp);
  subtract_max_kernel<<<tile_grid(s), kElementThreads, 0, stream>>>(z, z_stride, row_max, s);
  return cudaGetLastError();
}

cudaError_t launch_gather_target(const float* z, int64_t rows, int64_t vp, int64_t z_stride,
                                 const void* labels, const LabelRule& rule, float* target,
                                 cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  gather_target_kernel<<<per_row_grid(rows), kPerRowThreads, 0, stream>>>(z, rows, z_stride,
                                                                          labels, rule, target);
  return cudaGetLastError();
}

cudaError_t launch_row_sum(const float* z, int64_t rows, int64_t vp, int64_t z_stride,
                           float* sums, cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  row_sum_kernel<<<row_grid(rows), kRowThreads, 0, stream>>>(z, rows, vp, z_stride, sums);
  return cudaGetLastError();
}

cudaError_t launch_exp(float* z, int64_t rows, int64_t vp, int64_t z_stride,
                       cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  const TileSpace s = tile_space(rows, vp);
  exp_kernel<<<tile_grid(s), kElementThreads, 0, stream>>>(z, z_stride, s);
  return cudaGetLastError();
}

cudaError_t launch_loss(const LossArgs& args, cudaStream_t stream) {
  if (nothing_to_do(args.rows)) return cudaSuccess;
  loss_kernel<<<per_row_grid(args.rows), kPerRowThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t launch_forward_grad(const ForwardGradArgs& args, cudaStream_t stream) {
  if (nothing_to_do(args.rows, args.vocab_local)) return cudaSuccess;
  const TileSpace s = tile_space(args.rows, args.vocab_local);
  return with_type(args.grad.type, [&](auto tag) {
    using G = decltype(tag);
    forward_grad_kernel<G><<<tile_grid(s), kElementThreads, 0, stream>>>(
        args, static_cast<G*>(args.grad.data), s);
    return cudaGetLastError();
  });
}

cudaError_t launch_backward(const BackwardArgs& args, cudaStream_t stream) {
  if (nothing_to_do(args.rows, args.vocab_local)) return cudaSuccess;
  const TileSpace s = tile_space(args.rows, args.vocab_local);
  return with_type(args.logits.type, [&](auto logits_tag) {
    using T = decltype(logits_tag);
    return with_type(args.grad.type, [&](auto grad_tag) {
      using G = decltype(grad_tag);
      backward_kernel<T, G><<<tile_grid(s), kElementThreads, 0, stream>>>(
          args, static_cast<const T*>(args.logits.data), static_cast<G*>(args.grad.data), s);
      return cudaGetLastError();
    });
  });
}

cudaError_t ce_kernel_image_status() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, row_max_kernel);
}

}  // namespace switchyard::native::cuda
