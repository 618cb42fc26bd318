// te's normalization kernels (README.md, "Normalization").
//
//   norm_forward_kernel   persistent blocks of `groups` groups; a group of `threads` threads
//                         holds one row in registers (thread t: chunks t, t + threads, ...),
//                         merges (count, mean, M2) with Chan's formula (LayerNorm) or the sum
//                         of squares (RMS/L2), and writes y, mean, rstd (and h = x + residual)
//   norm_backward_kernel  persistent blocks over the fixed chunks of rows_per_chunk rows; the
//                         groups of a block share a chunk, each accumulating dgamma/dbeta of
//                         its rows per column in its own shared-memory array; at the end of
//                         the chunk the arrays are summed in group order into the chunk's
//                         partial (workspace); dx per row
//   norm_finalize_kernel  dgamma/dbeta = the chunk partials summed in a fixed order
//
// Every order of summation is fixed by the plan (hidden, x dtype, rows), never by the grid, so
// sm_margin changes the speed only.
#include "norm_kernels.hpp"

#include "cuda_support.hpp"
#include "te_device.cuh"

#include <switchyard/norm.h>
#include <switchyard/plugin_helpers.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>

namespace switchyard::te {
namespace {

__device__ __forceinline__ Group group_of(int threads) {
  Group g;
  g.index = static_cast<int>(threadIdx.x) / threads;
  g.thread = static_cast<int>(threadIdx.x) - g.index * threads;
  g.threads = threads;
  return g;
}

__device__ __forceinline__ int64_t element_bytes_of(DType d) { return d == DType::F32 ? 4 : 2; }

__device__ __forceinline__ int valid_count(int64_t col0, int vec, int64_t hidden) {
  const int64_t left = hidden - col0;
  return left >= vec ? vec : left > 0 ? static_cast<int>(left) : 0;
}

// gamma_eff (1 + gamma with zero-centred gamma, added in fp32; 1 without gamma) and beta of
// chunk [col0, col0 + valid).
template <int VEC>
__device__ __forceinline__ void load_parameters(const void* weight, const void* bias, DType d,
                                                bool zero_centered, int64_t col0, int valid,
                                                bool vector, float (&gamma)[VEC],
                                                float (&beta)[VEC]) {
  if (weight != nullptr) {
    load_floats<VEC>(d, weight, col0, valid, vector, 0.0f, gamma);
    if (zero_centered) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) gamma[e] += 1.0f;
    }
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) gamma[e] = 1.0f;
  }
  if (bias != nullptr) {
    load_floats<VEC>(d, bias, col0, valid, vector, 0.0f, beta);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) beta[e] = 0.0f;
  }
}

// ---- forward -------------------------------------------------------------------------------------

// 16 bytes of a row of x (VEC elements of x's dtype) held as raw bits: half the registers of
// the floats for 16-bit x, so that two 512-thread blocks fit a multiprocessor (twice the rows,
// hence twice the loads, in flight). Values are converted where they are used, exactly.
struct RawChunk {
  uint32_t u[4];
};

template <int VEC>
__device__ __forceinline__ float raw_get(const RawChunk& c, int e, bool bf16) {
  if constexpr (VEC == 4) {
    return __uint_as_float(c.u[e]);
  } else {
    const uint32_t word = c.u[e >> 1];
    const uint32_t bits = (e & 1) != 0 ? word >> 16 : word & 0xffffu;
    return bf16 ? __uint_as_float(bits << 16)
                : __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  }
}

// Element e = v rounded once to x's dtype.
template <int VEC>
__device__ __forceinline__ void raw_set(RawChunk& c, int e, bool bf16, float v) {
  if constexpr (VEC == 4) {
    c.u[e] = __float_as_uint(v);
  } else {
    const uint32_t bits =
        bf16 ? DT<DType::BF16>::from_float(v) : DT<DType::F16>::from_float(v);
    uint32_t& word = c.u[e >> 1];
    word = (e & 1) != 0 ? (word & 0xffffu) | (bits << 16) : (word & 0xffff0000u) | bits;
  }
}

// Elements [col0, col0 + valid) of `row`; the rest hold 0 (+0.0 in every dtype).
template <int VEC>
__device__ __forceinline__ void load_raw(RawChunk& c, const void* row, int64_t col0, int valid,
                                         bool vector) {
  constexpr int kBytes = 16 / VEC;
  const char* p = static_cast<const char*>(row) + col0 * kBytes;
  if (vector && valid == VEC) {
    const uint4 w = load16<Cache::Normal>(p);
    c.u[0] = w.x;
    c.u[1] = w.y;
    c.u[2] = w.z;
    c.u[3] = w.w;
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) c.u[i] = 0u;
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    if (e >= valid) continue;
    if constexpr (VEC == 4) {
      c.u[e] = reinterpret_cast<const uint32_t*>(p)[e];
    } else {
      const uint32_t bits = reinterpret_cast<const uint16_t*>(p)[e];
      c.u[e >> 1] |= (e & 1) != 0 ? bits << 16 : bits;
    }
  }
}

template <int VEC, int CPT>
__global__ void __launch_bounds__(kNormMaxBlock, 2) norm_forward_kernel(NormForwardArgs a) {
  __shared__ GroupScratch scratch;
  const Group g = group_of(a.threads);
  const bool vector = a.vector_ok != 0;
  const bool layer = a.kind == SY_NORM_LAYER;
  const bool residual = a.residual != nullptr;
  const bool bf16 = a.x_dtype == DType::BF16;
  const int64_t hidden = a.hidden;
  const float h_count = static_cast<float>(hidden);
  int parity = 0;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * a.groups + g.index; row < a.rows;
       row += static_cast<int64_t>(gridDim.x) * a.groups) {
    const char* x_row = static_cast<const char*>(a.x) + row * a.x_row_bytes;
    const int64_t next = row + static_cast<int64_t>(gridDim.x) * a.groups;
    if (g.thread == 0 && next < a.rows) {
      // The group's next row streams into L2 while this one is computed.
      const int64_t bytes = hidden * element_bytes_of(a.x_dtype);
      prefetch_l2(static_cast<const char*>(a.x) + next * a.x_row_bytes, bytes);
      if (residual)
        prefetch_l2(static_cast<const char*>(a.residual) + next * a.residual_row_bytes, bytes);
    }
    RawChunk h[CPT];  // h = x, or x + residual rounded to x's dtype
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int64_t col0 = (static_cast<int64_t>(g.thread) + static_cast<int64_t>(c) * g.threads) * VEC;
      const int valid = valid_count(col0, VEC, hidden);
      load_raw<VEC>(h[c], x_row, col0, valid, vector);
      if (residual && valid > 0) {
        float r[VEC], hv[VEC];
        load_floats<VEC>(a.x_dtype, static_cast<const char*>(a.residual) + row * a.residual_row_bytes,
                         col0, valid, vector, 0.0f, r);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          if (e < valid) raw_set<VEC>(h[c], e, bf16, raw_get<VEC>(h[c], e, bf16) + r[e]);
          hv[e] = raw_get<VEC>(h[c], e, bf16);
        }
        // h as the x dtype holds it; this thread read its elements of x and residual above,
        // so residual_out may be either of them.
        store_floats<VEC>(a.x_dtype, static_cast<char*>(a.residual_out) + row * a.residual_out_row_bytes,
                          col0, valid, vector, hv);
      }
    }

    float mean = 0.0f;
    float rstd;
    if (layer) {
      // This thread's (count, mean, M2), then Chan's merge over the group.
      float count = 0.0f, sum = 0.0f;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int64_t col0 = (static_cast<int64_t>(g.thread) + static_cast<int64_t>(c) * g.threads) * VEC;
        const int valid = valid_count(col0, VEC, hidden);
        count += static_cast<float>(valid);
#pragma unroll
        for (int e = 0; e < VEC; ++e) sum += raw_get<VEC>(h[c], e, bf16);  // padding is 0
      }
      const float local_mean = count > 0.0f ? sum / count : 0.0f;
      float m2 = 0.0f;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int64_t col0 = (static_cast<int64_t>(g.thread) + static_cast<int64_t>(c) * g.threads) * VEC;
        const int valid = valid_count(col0, VEC, hidden);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const float d = raw_get<VEC>(h[c], e, bf16) - local_mean;
          m2 += e < valid ? d * d : 0.0f;
        }
      }
      const float4 merged =
          group_reduce(make_float4(count, local_mean, m2, 0.0f), g, scratch, parity, ChanMerge{});
      mean = merged.y;
      rstd = norm_rstd(merged.z / h_count, a.eps);
    } else {
      float squares = 0.0f;
#pragma unroll
      for (int c = 0; c < CPT; ++c)
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const float v = raw_get<VEC>(h[c], e, bf16);
          squares += v * v;
        }
      const float4 merged =
          group_reduce(make_float4(squares, 0.0f, 0.0f, 0.0f), g, scratch, parity, SumMerge{});
      rstd = norm_rstd(merged.x / h_count, a.eps);
    }

    char* y_row = static_cast<char*>(a.y) + row * a.y_row_bytes;
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int64_t col0 = (static_cast<int64_t>(g.thread) + static_cast<int64_t>(c) * g.threads) * VEC;
      const int valid = valid_count(col0, VEC, hidden);
      if (valid == 0) continue;
      float gamma[VEC], beta[VEC], y[VEC];
      load_parameters<VEC>(a.weight, a.bias, a.weight_dtype, a.zero_centered != 0, col0, valid,
                           vector, gamma, beta);
#pragma unroll
      for (int e = 0; e < VEC; ++e) y[e] = (raw_get<VEC>(h[c], e, bf16) - mean) * rstd * gamma[e] + beta[e];
      store_floats<VEC>(a.y_dtype, y_row, col0, valid, vector, y);
    }
    if (g.thread == 0) {
      a.rstd[row] = rstd;
      if (layer && a.mean != nullptr) a.mean[row] = mean;
    }
  }
}

// ---- backward ------------------------------------------------------------------------------------

// BETA: dbias is accumulated (a.partial_beta != NULL); a template parameter so that RMS and
// L2 rows hold no registers for it.
template <int VEC, int CPT, bool BETA>
__global__ void __launch_bounds__(kNormMaxBlock) norm_backward_kernel(NormBackwardArgs a) {
  extern __shared__ float accumulators[];  // [gamma: groups][hidden], then [beta: groups][hidden]
  __shared__ GroupScratch scratch;
  const Group g = group_of(a.threads);
  const bool vector = a.vector_ok != 0;
  const bool layer = a.kind == SY_NORM_LAYER;
  const bool rms = a.kind == SY_NORM_RMS;
  const bool memory_efficient = a.memory_efficient != 0;
  const int64_t hidden = a.hidden;
  const float h_count = static_cast<float>(hidden);
  const int beta_base = a.partial_gamma != nullptr ? a.groups : 0;
  const bool want_gamma = a.partial_gamma != nullptr;
  constexpr bool want_beta = BETA;
  float* acc_gamma = want_gamma ? accumulators + static_cast<int64_t>(g.index) * hidden : nullptr;
  float* acc_beta =
      want_beta ? accumulators + static_cast<int64_t>(beta_base + g.index) * hidden : nullptr;
  int parity = 0;

  for (int64_t chunk = blockIdx.x; chunk < a.chunk_count; chunk += gridDim.x) {
    // dgamma/dbeta of this thread's columns over its group's rows of the chunk, in registers
    // (a thread owns the same columns in every row). The same order of additions as a
    // per-column shared-memory array, without its read-modify-write per element (8-way bank
    // conflicts at a 32-byte stride between lanes).
    float sum_dy_xhat[CPT][VEC], sum_dy[CPT][VEC];
#pragma unroll
    for (int c = 0; c < CPT; ++c)
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        sum_dy_xhat[c][e] = 0.0f;
        sum_dy[c][e] = 0.0f;
      }
    const int64_t first = chunk * a.rows_per_chunk;
    const int64_t end = first + a.rows_per_chunk < a.rows ? first + a.rows_per_chunk : a.rows;
    for (int64_t row = first + g.index; row < end; row += a.groups) {
      const float rstd = a.rstd[row];
      const float mean = layer && !memory_efficient ? a.mean[row] : 0.0f;
      const char* dy_row = static_cast<const char*>(a.dy) + row * a.dy_row_bytes;
      const char* xy_row = static_cast<const char*>(a.x_or_y) + row * a.x_or_y_row_bytes;
      // The group's next row (in this chunk, else in its next chunk) streams into L2.
      int64_t next = row + a.groups;
      if (next >= end) next = (chunk + gridDim.x) * a.rows_per_chunk + g.index;
      if (g.thread == 0 && next < a.rows) {
        prefetch_l2(static_cast<const char*>(a.dy) + next * a.dy_row_bytes,
                    hidden * element_bytes_of(a.y_dtype));
        prefetch_l2(static_cast<const char*>(a.x_or_y) + next * a.x_or_y_row_bytes,
                    hidden * element_bytes_of(a.x_or_y_dtype));
      }
      float xhat[CPT][VEC], gh[CPT][VEC];
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int64_t col0 = (static_cast<int64_t>(g.thread) + static_cast<int64_t>(c) * g.threads) * VEC;
        const int valid = valid_count(col0, VEC, hidden);
        load_floats<VEC>(a.y_dtype, dy_row, col0, valid, vector, 0.0f, gh[c]);
        load_floats<VEC>(a.x_or_y_dtype, xy_row, col0, valid, vector, 0.0f, xhat[c]);
      }
      float sum_gh = 0.0f, sum_gh_xhat = 0.0f;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int64_t col0 = (static_cast<int64_t>(g.thread) + static_cast<int64_t>(c) * g.threads) * VEC;
        const int valid = valid_count(col0, VEC, hidden);
        if (valid == 0) continue;
        float gamma[VEC], beta[VEC];
        load_parameters<VEC>(a.weight, memory_efficient ? a.bias : nullptr, a.weight_dtype,
                             a.zero_centered != 0, col0, valid, vector, gamma, beta);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          if (e >= valid) {
            xhat[c][e] = 0.0f;
            gh[c][e] = 0.0f;
            continue;
          }
          const float v = xhat[c][e];
          float x_hat;
          if (!memory_efficient)
            x_hat = (v - mean) * rstd;
          else if (layer)
            x_hat = (v - beta[e]) / gamma[e];
          else if (rms)
            x_hat = v / gamma[e];
          else
            x_hat = v;  // L2: y is x_hat
          const float dy = gh[c][e];
          sum_dy_xhat[c][e] += dy * x_hat;
          if (want_beta) sum_dy[c][e] += dy;
          const float g_h = dy * gamma[e];  // gamma is 1 for L2
          xhat[c][e] = x_hat;
          gh[c][e] = g_h;
          sum_gh += g_h;
          sum_gh_xhat += g_h * x_hat;
        }
      }
      const float4 sums = group_reduce(make_float4(sum_gh, sum_gh_xhat, 0.0f, 0.0f), g, scratch,
                                       parity, SumMerge{});
      const float mean_gh = layer ? sums.x / h_count : 0.0f;
      const float mean_gh_xhat = sums.y / h_count;
      char* dx_row = static_cast<char*>(a.dx) + row * a.dx_row_bytes;
      const char* dres_row =
          a.d_residual_out != nullptr
              ? static_cast<const char*>(a.d_residual_out) + row * a.d_residual_out_row_bytes
              : nullptr;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        const int64_t col0 = (static_cast<int64_t>(g.thread) + static_cast<int64_t>(c) * g.threads) * VEC;
        const int valid = valid_count(col0, VEC, hidden);
        if (valid == 0) continue;
        float dx[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          dx[e] = rstd * (gh[c][e] - mean_gh - xhat[c][e] * mean_gh_xhat);
        if (dres_row != nullptr) {
          // Read before dx is stored: dx may be d_residual_out itself (this thread's elements).
          float dres[VEC];
          load_floats<VEC>(a.x_dtype, dres_row, col0, valid, vector, 0.0f, dres);
#pragma unroll
          for (int e = 0; e < VEC; ++e) dx[e] += dres[e];
        }
        store_floats<VEC>(a.x_dtype, dx_row, col0, valid, vector, dx);
      }
    }
    // The groups' sums into shared memory, then the chunk's partial: the groups' sums added
    // in group order. (Columns past `hidden` hold 0 and are not stored.)
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int64_t col0 = (static_cast<int64_t>(g.thread) + static_cast<int64_t>(c) * g.threads) * VEC;
      const int valid = valid_count(col0, VEC, hidden);
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        if (e >= valid) continue;
        if (want_gamma) acc_gamma[col0 + e] = sum_dy_xhat[c][e];
        if (want_beta) acc_beta[col0 + e] = sum_dy[c][e];
      }
    }
    __syncthreads();
    for (int64_t col = threadIdx.x; col < hidden; col += blockDim.x) {
      if (want_gamma) {
        float s = accumulators[col];
        for (int q = 1; q < a.groups; ++q) s += accumulators[static_cast<int64_t>(q) * hidden + col];
        a.partial_gamma[chunk * hidden + col] = s;
      }
      if (want_beta) {
        const float* beta_arrays = accumulators + static_cast<int64_t>(beta_base) * hidden;
        float s = beta_arrays[col];
        for (int q = 1; q < a.groups; ++q) s += beta_arrays[static_cast<int64_t>(q) * hidden + col];
        a.partial_beta[chunk * hidden + col] = s;
      }
    }
    // The arrays are written again only after every thread has read them.
    __syncthreads();
  }
}

// ---- finalize ----------------------------------------------------------------------------------

constexpr int kFinalizeColumns = 32;
constexpr int kFinalizeSegments = 8;

// Block (32 columns x 8 segments): segment s sums chunks s, s + 8, ... in order, then the 8
// segment sums are added in order. grid.y: 0 = dgamma, 1 = dbeta.
__global__ void __launch_bounds__(kFinalizeColumns* kFinalizeSegments)
    norm_finalize_kernel(NormFinalizeArgs a) {
  __shared__ float sums[kFinalizeSegments][kFinalizeColumns];
  const bool beta = blockIdx.y == 1;
  const float* partial = beta ? a.partial_beta : a.partial_gamma;
  void* out = beta ? a.dbias : a.dweight;
  if (out == nullptr || partial == nullptr) return;  // uniform per block
  const int lane = static_cast<int>(threadIdx.x) % kFinalizeColumns;
  const int segment = static_cast<int>(threadIdx.x) / kFinalizeColumns;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kFinalizeColumns + lane;
  float s = 0.0f;
  if (col < a.hidden)
    for (int64_t c = segment; c < a.chunk_count; c += kFinalizeSegments) s += partial[c * a.hidden + col];
  sums[segment][lane] = s;
  __syncthreads();
  if (segment != 0 || col >= a.hidden) return;
  float total = sums[0][lane];
  for (int q = 1; q < kFinalizeSegments; ++q) total += sums[q][lane];
  if (a.accumulate != 0) total += static_cast<const float*>(out)[col];
  store_one(a.grad_dtype, out, col, total);
}

// ---- launch ------------------------------------------------------------------------------------

cudaStream_t stream_of(void* stream) { return static_cast<cudaStream_t>(stream); }

// Persistent grid: (multiprocessors - sm_margin) x blocks per multiprocessor, at most `units`.
int grid_for(const void* kernel, int block, size_t shared, int64_t units, int device,
             int sm_margin) {
  const DeviceInfo info = device_info(device);
  const int usable = info.multiprocessors - sm_margin;
  if (usable < 1)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             "problem.sm_margin = " + std::to_string(sm_margin) + " leaves none of the " +
                 std::to_string(info.multiprocessors) + " multiprocessors of cuda:" +
                 std::to_string(device) + " to te; use a margin below " +
                 std::to_string(info.multiprocessors));
  const int64_t blocks =
      static_cast<int64_t>(usable) * blocks_per_multiprocessor(kernel, block, shared, device);
  return static_cast<int>(std::min<int64_t>(blocks, units));
}

template <int VEC, int CPT>
void forward_for(const NormForwardArgs& a, int device, int sm_margin, void* stream) {
  const auto kernel = norm_forward_kernel<VEC, CPT>;
  const int block = a.threads * a.groups;
  const int64_t units = (a.rows + a.groups - 1) / a.groups;
  const int grid = grid_for(reinterpret_cast<const void*>(kernel), block, 0, units, device, sm_margin);
  kernel<<<grid, block, 0, stream_of(stream)>>>(a);
}

template <int VEC, int CPT, bool BETA>
void backward_kernel_for(const NormBackwardArgs& a, size_t shared, int device, int sm_margin,
                         void* stream) {
  static std::atomic<uint64_t> raised{0};  // devices whose shared-memory limit was raised
  const auto kernel = norm_backward_kernel<VEC, CPT, BETA>;
  const uint64_t bit = device < 64 ? (uint64_t{1} << device) : 0;
  if (shared > 48 * 1024 && (bit == 0 || (raised.load(std::memory_order_acquire) & bit) == 0)) {
    cudaFuncAttributes attributes{};
    check_cuda(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes(norm_backward_kernel)");
    const int limit = device_info(device).max_shared_per_block_optin -
                      static_cast<int>(attributes.sharedSizeBytes);
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, limit),
               "cudaFuncSetAttribute(norm_backward_kernel, max dynamic shared memory)");
    raised.fetch_or(bit, std::memory_order_acq_rel);
  }
  const int block = a.threads * a.groups;
  const int grid = grid_for(reinterpret_cast<const void*>(kernel), block, shared, a.chunk_count,
                            device, sm_margin);
  kernel<<<grid, block, shared, stream_of(stream)>>>(a);
}

template <int VEC, int CPT>
void backward_for(const NormBackwardArgs& a, size_t shared, int device, int sm_margin,
                  void* stream) {
  if (a.partial_beta != nullptr) backward_kernel_for<VEC, CPT, true>(a, shared, device, sm_margin, stream);
  else backward_kernel_for<VEC, CPT, false>(a, shared, device, sm_margin, stream);
}

}  // namespace

void launch_norm_forward(const NormForwardArgs& a, const NormLayout& layout, int device,
                         int sm_margin, void* stream) {
  const bool wide = layout.chunks_per_thread > 1;
  if (layout.vec == 8) {
    if (wide) forward_for<8, 4>(a, device, sm_margin, stream);
    else forward_for<8, 1>(a, device, sm_margin, stream);
  } else {
    if (wide) forward_for<4, 8>(a, device, sm_margin, stream);
    else forward_for<4, 1>(a, device, sm_margin, stream);
  }
  check_cuda(cudaGetLastError(), "launching norm_forward_kernel");
}

void launch_norm_backward(const NormBackwardArgs& a, const NormLayout& layout, size_t shared,
                          int device, int sm_margin, void* stream) {
  const int elements = layout.vec * layout.chunks_per_thread;
  if (layout.vec == 8) {
    if (elements == 8) backward_for<8, 1>(a, shared, device, sm_margin, stream);
    else if (elements == 16) backward_for<8, 2>(a, shared, device, sm_margin, stream);
    else backward_for<8, 4>(a, shared, device, sm_margin, stream);
  } else {
    if (elements == 4) backward_for<4, 1>(a, shared, device, sm_margin, stream);
    else if (elements == 16) backward_for<4, 4>(a, shared, device, sm_margin, stream);
    else backward_for<4, 8>(a, shared, device, sm_margin, stream);
  }
  check_cuda(cudaGetLastError(), "launching norm_backward_kernel");
}

void launch_norm_finalize(const NormFinalizeArgs& a, void* stream) {
  const dim3 grid(static_cast<unsigned>((a.hidden + kFinalizeColumns - 1) / kFinalizeColumns), 2);
  norm_finalize_kernel<<<grid, kFinalizeColumns * kFinalizeSegments, 0, stream_of(stream)>>>(a);
  check_cuda(cudaGetLastError(), "launching norm_finalize_kernel");
}

}  // namespace switchyard::te
