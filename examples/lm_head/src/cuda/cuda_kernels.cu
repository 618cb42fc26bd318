// The LM head's kernels on CUDA: gather and a deterministic scatter-add (stable sort by token,
// then one thread per (token, column) sums its rows in batch order), tiled fp32 projection
// matmuls, the float64 hidden-gradient product, and the optimizer updates.
//
// Exactness: the float sums use __fmul_rn/__fadd_rn, which the compiler never contracts into
// FMAs, and run over the summed index in the order the CPU kernels use; the float64
// hidden-gradient sum keeps the CPU's 256-column blocks. The fp32 outputs then round like the
// CPU's, and what remains different between the devices is the backends' own arithmetic.
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace switchyard::lm_head {
namespace {

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill the GPU, never more than the grid allows.
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(std::min<int64_t>(kMaxBlocks, (count + kThreads - 1) / kThreads));
}

__device__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---- element-wise -----------------------------------------------------------------------

__global__ void gather_rows_kernel(const float* table, const int64_t* ids, int64_t n,
                                   int64_t width, float* out) {
  for (int64_t e = global_thread(); e < n * width; e += grid_threads()) {
    const int64_t i = e / width, k = e % width;
    out[e] = table[ids[i] * width + k];
  }
}

__global__ void fill_kernel(float* out, int64_t count, float value) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) out[i] = value;
}

__global__ void iota_kernel(int64_t* out, int64_t count) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) out[i] = i;
}

__global__ void to_float_kernel(const double* in, int64_t count, float* out) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) out[i] = __double2float_rn(in[i]);
}

__global__ void sgd_kernel(float* param, const float* grad, int64_t count, float lr) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) {
    param[i] = __fsub_rn(param[i], __fmul_rn(lr, grad[i]));
  }
}

struct AdamConstants {
  float b1, b2, one_minus_b1, one_minus_b2, lr, eps, m_scale, v_scale;
};

// The CPU's expression, operation by operation:
//   m = b1 m + (1 - b1) g;  v = b2 v + ((1 - b2) g) g;  p -= (lr m̂) / (sqrt(v̂) + eps)
__global__ void adam_kernel(float* param, const float* grad, float* m, float* v, int64_t count,
                            AdamConstants c) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float g = grad[i];
    const float mi = __fadd_rn(__fmul_rn(c.b1, m[i]), __fmul_rn(c.one_minus_b1, g));
    const float vi = __fadd_rn(__fmul_rn(c.b2, v[i]), __fmul_rn(__fmul_rn(c.one_minus_b2, g), g));
    m[i] = mi;
    v[i] = vi;
    const float m_hat = __fmul_rn(mi, c.m_scale);
    const float v_hat = __fmul_rn(vi, c.v_scale);
    const float step = __fdiv_rn(__fmul_rn(c.lr, m_hat), __fadd_rn(__fsqrt_rn(v_hat), c.eps));
    param[i] = __fsub_rn(param[i], step);
  }
}

// ---- the mean: one block, a fixed reduction tree ------------------------------------------

constexpr int kMeanThreads = 1024;

__global__ void mean_kernel(const float* values, int64_t count, double* out) {
  __shared__ double partial[kMeanThreads];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += kMeanThreads) sum += values[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int width = kMeanThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0] / static_cast<double>(count);
}

// ---- scatter-add: runs of equal tokens after a stable sort ----------------------------------

// sorted_ids[p] with order[p] its row in the batch; equal ids are adjacent and, the sort being
// stable, their rows ascend. The thread at the head of a run owns (token, k) and adds the
// run's rows in batch order onto the existing value, as the CPU loop does.
__global__ void add_runs_kernel(const int64_t* sorted_ids, const int64_t* order, int64_t n,
                                int64_t width, const float* rows, float* table_grad) {
  for (int64_t e = global_thread(); e < n * width; e += grid_threads()) {
    const int64_t p = e / width, k = e % width;
    const int64_t id = sorted_ids[p];
    if (p > 0 && sorted_ids[p - 1] == id) continue;  // not the head of its run
    float acc = table_grad[id * width + k];
    for (int64_t q = p; q < n && sorted_ids[q] == id; ++q) {
      acc = __fadd_rn(acc, rows[order[q] * width + k]);
    }
    table_grad[id * width + k] = acc;
  }
}

// ---- fp32 product: C[m, c] = Σ_t A(m, t) · B(t, c), t in order from 0 ------------------------

constexpr int kTileM = 64, kTileC = 64, kTileT = 16;
constexpr int kThreadsM = 16, kThreadsC = 16;  // 256 threads, 4 x 4 outputs each
constexpr int kPerThreadM = kTileM / kThreadsM, kPerThreadC = kTileC / kThreadsC;

struct Operand {
  const float* data;
  int64_t stride_outer;  // A: per m; B: per t
  int64_t stride_inner;  // A: per t; B: per c
};

// A(m, t) = a.data[m * a.stride_outer + t * a.stride_inner],
// B(t, c) = b.data[t * b.stride_outer + c * b.stride_inner], out[m * ldc + c].
__global__ void __launch_bounds__(kThreadsM * kThreadsC)
    product_f32_kernel(Operand a, Operand b, int64_t M, int64_t C, int64_t T, float* out,
                       int64_t ldc) {
  __shared__ float a_tile[kTileT][kTileM];
  __shared__ float b_tile[kTileT][kTileC];
  const int tx = threadIdx.x % kThreadsC, ty = threadIdx.x / kThreadsC;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTileM;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTileC;
  // Consecutive threads load along whichever dimension is contiguous in memory.
  const bool a_t_contiguous = a.stride_inner == 1;
  const bool b_c_contiguous = b.stride_inner == 1;

  float acc[kPerThreadM][kPerThreadC] = {};
  for (int64_t t0 = 0; t0 < T; t0 += kTileT) {
    for (int l = threadIdx.x; l < kTileT * kTileM; l += kThreadsM * kThreadsC) {
      const int tt = a_t_contiguous ? l % kTileT : l / kTileM;
      const int mm = a_t_contiguous ? l / kTileT : l % kTileM;
      const int64_t m = m0 + mm, t = t0 + tt;
      a_tile[tt][mm] = (m < M && t < T) ? a.data[m * a.stride_outer + t * a.stride_inner] : 0.0f;
    }
    for (int l = threadIdx.x; l < kTileT * kTileC; l += kThreadsM * kThreadsC) {
      const int tt = b_c_contiguous ? l / kTileC : l % kTileT;
      const int cc = b_c_contiguous ? l % kTileC : l / kTileT;
      const int64_t c = c0 + cc, t = t0 + tt;
      b_tile[tt][cc] = (c < C && t < T) ? b.data[t * b.stride_outer + c * b.stride_inner] : 0.0f;
    }
    __syncthreads();
    const int depth = static_cast<int>(T - t0 < kTileT ? T - t0 : kTileT);
    for (int tt = 0; tt < depth; ++tt) {
      float a_values[kPerThreadM], b_values[kPerThreadC];
      for (int i = 0; i < kPerThreadM; ++i) a_values[i] = a_tile[tt][ty + i * kThreadsM];
      for (int j = 0; j < kPerThreadC; ++j) b_values[j] = b_tile[tt][tx + j * kThreadsC];
      for (int i = 0; i < kPerThreadM; ++i) {
        for (int j = 0; j < kPerThreadC; ++j) {
          acc[i][j] = __fadd_rn(acc[i][j], __fmul_rn(a_values[i], b_values[j]));
        }
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < kPerThreadM; ++i) {
    const int64_t m = m0 + ty + i * kThreadsM;
    if (m >= M) continue;
    for (int j = 0; j < kPerThreadC; ++j) {
      const int64_t c = c0 + tx + j * kThreadsC;
      if (c < C) out[m * ldc + c] = acc[i][j];
    }
  }
}

// ---- float64 hidden gradient: dy[m, c] = Σ_t g[m, t] · w[c, t] ------------------------------

// The CPU sums each block of kColumnBlock columns from zero and adds the block sums in order;
// so does this kernel (one output per thread, tiles of kGradTileT columns that divide the
// block). Products of two floats are exact in double, so only the order of the adds matters.
constexpr int64_t kColumnBlock = 256;  // cpu_kernels.cpp's kColumnBlock
constexpr int kGradTile = 16, kGradTileT = 32;
static_assert(kColumnBlock % kGradTileT == 0, "tiles must not straddle a column block");

__global__ void __launch_bounds__(kGradTile * kGradTile)
    grad_input_f64_kernel(const float* g, const float* w, int64_t M, int64_t C, int64_t T,
                          double* out) {
  __shared__ float g_tile[kGradTile][kGradTileT + 1];  // +1: rows fall in different banks
  __shared__ float w_tile[kGradTile][kGradTileT + 1];
  const int tx = threadIdx.x % kGradTile, ty = threadIdx.x / kGradTile;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kGradTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.y) * kGradTile;

  double total = 0, block_sum = 0;
  for (int64_t t0 = 0; t0 < T; t0 += kGradTileT) {
    for (int l = threadIdx.x; l < kGradTile * kGradTileT; l += kGradTile * kGradTile) {
      const int row = l / kGradTileT, tt = l % kGradTileT;
      const int64_t t = t0 + tt;
      const int64_t m = m0 + row, c = c0 + row;
      g_tile[row][tt] = (m < M && t < T) ? g[m * T + t] : 0.0f;
      w_tile[row][tt] = (c < C && t < T) ? w[c * T + t] : 0.0f;
    }
    __syncthreads();
    const int depth = static_cast<int>(T - t0 < kGradTileT ? T - t0 : kGradTileT);
    for (int tt = 0; tt < depth; ++tt) {
      block_sum = __dadd_rn(block_sum, __dmul_rn(static_cast<double>(g_tile[ty][tt]),
                                                 static_cast<double>(w_tile[tx][tt])));
    }
    __syncthreads();
    const int64_t next = t0 + kGradTileT;
    if (next % kColumnBlock == 0 || next >= T) {
      total = __dadd_rn(total, block_sum);
      block_sum = 0;
    }
  }
  const int64_t m = m0 + ty, c = c0 + tx;
  if (m < M && c < C) out[m * C + c] = total;
}

// Device memory for one call's scratch, allocated and freed in stream order.
class StreamScratch {
 public:
  StreamScratch(size_t bytes, cudaStream_t stream, int32_t device) : stream_(stream) {
    cuda_check(cudaMallocAsync(&data_, bytes == 0 ? 1 : bytes, stream), device,
               "cudaMallocAsync (" + std::to_string(bytes) + " bytes of scratch)");
  }
  ~StreamScratch() { cudaFreeAsync(data_, stream_); }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(data_); }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace

void CudaKernels::activate() const {
  cuda_check(cudaSetDevice(device_), device_, "cudaSetDevice");
}

void CudaKernels::check_launch(const char* kernel) const {
  cuda_check(cudaGetLastError(), device_, std::string("launching ") + kernel);
}

void CudaKernels::gather_rows(const float* table, const int64_t* ids, int64_t n, int64_t width,
                              float* out) const {
  if (n <= 0 || width <= 0) return;
  activate();
  gather_rows_kernel<<<blocks_for(n * width), kThreads, 0, stream_>>>(table, ids, n, width, out);
  check_launch("gather_rows_kernel");
}

void CudaKernels::scatter_add_rows(const float* rows, const int64_t* ids, int64_t n,
                                   int64_t width, float* table_grad) const {
  if (n <= 0 || width <= 0) return;
  activate();
  const auto count = static_cast<size_t>(n);
  StreamScratch rows_in(count * sizeof(int64_t), stream_, device_);
  StreamScratch rows_out(count * sizeof(int64_t), stream_, device_);
  StreamScratch ids_out(count * sizeof(int64_t), stream_, device_);
  iota_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(rows_in.as<int64_t>(), n);
  check_launch("iota_kernel");

  // Radix sort is stable: rows of one token keep their batch order.
  size_t temp_bytes = 0;
  cuda_check(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, ids, ids_out.as<int64_t>(),
                                             rows_in.as<int64_t>(), rows_out.as<int64_t>(), n,
                                             0, 64, stream_),
             device_, "cub::DeviceRadixSort::SortPairs (sizing)");
  StreamScratch temp(temp_bytes, stream_, device_);
  cuda_check(cub::DeviceRadixSort::SortPairs(temp.as<void>(), temp_bytes, ids,
                                             ids_out.as<int64_t>(), rows_in.as<int64_t>(),
                                             rows_out.as<int64_t>(), n, 0, 64, stream_),
             device_, "cub::DeviceRadixSort::SortPairs of " + std::to_string(n) + " token ids");
  add_runs_kernel<<<blocks_for(n * width), kThreads, 0, stream_>>>(
      ids_out.as<int64_t>(), rows_out.as<int64_t>(), n, width, rows, table_grad);
  check_launch("add_runs_kernel");
}

void CudaKernels::project(const float* y, const float* w, int64_t n, int64_t h, int64_t vp,
                          float* logits) const {
  if (n <= 0 || vp <= 0) return;
  activate();
  if (h <= 0) return fill(logits, n * vp, 0.0f);
  // logits[row, j] = Σ_k y[row, k] · w[k, j]: A = y (m = row, t = k), B = w (t = k, c = j).
  const dim3 grid(static_cast<unsigned>((vp + kTileC - 1) / kTileC),
                  static_cast<unsigned>((n + kTileM - 1) / kTileM));
  product_f32_kernel<<<grid, kThreadsM * kThreadsC, 0, stream_>>>(
      Operand{y, h, 1}, Operand{w, vp, 1}, n, vp, h, logits, vp);
  check_launch("product_f32_kernel (projection)");
}

void CudaKernels::project_grad_weight(const float* y, const float* dlogits, int64_t n, int64_t h,
                                      int64_t vp, float* dw) const {
  if (h <= 0 || vp <= 0) return;
  activate();
  if (n <= 0) return fill(dw, h * vp, 0.0f);
  // dw[k, j] = Σ_row y[row, k] · dlogits[row, j]: A = yᵀ (m = k, t = row), B = dlogits.
  const dim3 grid(static_cast<unsigned>((vp + kTileC - 1) / kTileC),
                  static_cast<unsigned>((h + kTileM - 1) / kTileM));
  product_f32_kernel<<<grid, kThreadsM * kThreadsC, 0, stream_>>>(
      Operand{y, 1, h}, Operand{dlogits, vp, 1}, h, vp, n, dw, vp);
  check_launch("product_f32_kernel (projection weight gradient)");
}

void CudaKernels::project_grad_input(const float* dlogits, const float* w, int64_t n, int64_t h,
                                     int64_t vp, double* dy) const {
  if (n <= 0 || h <= 0) return;
  activate();
  const dim3 grid(static_cast<unsigned>((n + kGradTile - 1) / kGradTile),
                  static_cast<unsigned>((h + kGradTile - 1) / kGradTile));
  grad_input_f64_kernel<<<grid, kGradTile * kGradTile, 0, stream_>>>(dlogits, w, n, h, vp, dy);
  check_launch("grad_input_f64_kernel");
}

void CudaKernels::fill(float* out, int64_t count, float value) const {
  if (count <= 0) return;
  activate();
  fill_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(out, count, value);
  check_launch("fill_kernel");
}

void CudaKernels::to_float(const double* in, int64_t count, float* out) const {
  if (count <= 0) return;
  activate();
  to_float_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(in, count, out);
  check_launch("to_float_kernel");
}

double CudaKernels::mean(const float* values, int64_t count) const {
  if (count <= 0) return 0.0;
  activate();
  StreamScratch result(sizeof(double), stream_, device_);
  mean_kernel<<<1, kMeanThreads, 0, stream_>>>(values, count, result.as<double>());
  check_launch("mean_kernel");
  double host = 0;
  cuda_check(cudaMemcpyAsync(&host, result.as<double>(), sizeof host, cudaMemcpyDeviceToHost,
                             stream_),
             device_, "cudaMemcpyAsync (the mean, device to host)");
  // Errors of anything enqueued earlier (the backends' kernels included) surface here.
  cuda_check(cudaStreamSynchronize(stream_), device_, "cudaStreamSynchronize after the step");
  return host;
}

void CudaKernels::sgd_step(float* param, const float* grad, int64_t count, float lr) const {
  if (count <= 0) return;
  activate();
  sgd_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(param, grad, count, lr);
  check_launch("sgd_kernel");
}

void CudaKernels::adam_step(float* param, const float* grad, float* m, float* v, int64_t count,
                            const AdamHyper& hyper) const {
  if (count <= 0) return;
  activate();
  // The bias corrections exactly as the CPU computes them (double pow, rounded to float).
  const double t = static_cast<double>(hyper.step);
  AdamConstants c{};
  c.b1 = hyper.beta1;
  c.b2 = hyper.beta2;
  c.one_minus_b1 = 1.0f - hyper.beta1;
  c.one_minus_b2 = 1.0f - hyper.beta2;
  c.lr = hyper.lr;
  c.eps = hyper.eps;
  c.m_scale = static_cast<float>(1.0 / (1.0 - std::pow(hyper.beta1, t)));
  c.v_scale = static_cast<float>(1.0 / (1.0 - std::pow(hyper.beta2, t)));
  adam_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(param, grad, m, v, count, c);
  check_launch("adam_kernel");
}

}  // namespace switchyard::lm_head
