// The liger plugin's kernels as the host side sees them: plain parameter structs and one launch
// function per kernel. Compiled by both g++ (the host orchestration in ce_op.cpp / norm_op.cpp)
// and nvcc (kernels/*.cu); only <cuda_runtime_api.h> is needed for cudaStream_t / cudaError_t.
//
// Conventions: strides and offsets are in elements; a row of a matrix argument starts at
// data + row * stride. `aligned` means the data pointer is 16-byte aligned and the row stride is
// a multiple of 16 bytes, so 16-byte vector accesses are legal; either way every thread owns the
// same columns (chunks of kChunk elements dealt round-robin), so results do not depend on it.
#ifndef SWITCHYARD_LIGER_KERNELS_LAUNCH_HPP
#define SWITCHYARD_LIGER_KERNELS_LAUNCH_HPP

#include <cuda_runtime_api.h>

#include <cstdint>

namespace switchyard::liger {

// Elements per chunk: one 16-byte access of a 16-bit dtype, two of float32.
constexpr int kChunk = 8;
// Threads per row block, at most.
constexpr int kMaxRowThreads = 512;
// Norm backward: rows per dgamma/dbeta partial block, kNormRowsPerBlock or, for the problems of
// norm_rows_per_block, kNormLongRowsPerBlock. Fixed by the problem (never by the GPU or the grid)
// so that the row order of the dgamma/dbeta sums depends on nothing but the problem.
constexpr int kNormRowsPerBlock = 32;
constexpr int kNormLongRowsPerBlock = 64;
// Hidden sizes whose backward runs at most 2 blocks per SM on every path: 5120 < H <= 8192
// (register kernels of 2 chunks a thread: 288-512 threads x ~128 registers, 1 block per SM;
// LayerNorm's 4-chunk and the ring kernels: 192-512 threads under a 64K-register / 1024- or
// 512-thread-per-SM budget, 2 blocks; at 4096 < H <= 5120 the latter have 160-320 threads and
// run 3). And rows enough that 32-row partials outnumber 2 blocks on each of 160 SMs (more than
// a Hopper or Blackwell part has), so they take two rounds anyway.
constexpr int64_t kNormLongBlockMinHidden = 5120;  // exclusive
constexpr int64_t kNormLongBlockMaxHidden = 8192;
constexpr int64_t kNormLongBlockMinRows = int64_t{kNormRowsPerBlock} * 2 * 160;  // exclusive

enum class Dt : int32_t { F32 = 0, BF16 = 1, F16 = 2 };

inline int64_t dt_bytes(Dt t) { return t == Dt::F32 ? 4 : 2; }

// Threads for a row of `columns` elements: one chunk per thread up to kMaxRowThreads, a whole
// number of warps. Depends on the row length only (batch invariance).
inline int row_threads(int64_t columns) {
  const int64_t chunks = (columns + kChunk - 1) / kChunk;
  int64_t threads = (chunks + 31) / 32 * 32;
  if (threads < 32) threads = 32;
  if (threads > kMaxRowThreads) threads = kMaxRowThreads;
  return static_cast<int>(threads);
}

// ---- cross entropy --------------------------------------------------------------------------

// What every cross-entropy kernel reads about the rows.
struct CeRows {
  const void* logits = nullptr;
  int64_t logits_stride = 0;
  Dt logits_dt = Dt::F32;
  bool logits_aligned = false;
  const void* labels = nullptr;
  bool labels64 = true;
  int64_t rows = 0;
  int64_t vocab_local = 0;
  int64_t vocab_start = 0;
  int64_t vocab_size = 0;
  bool use_ignore_index = false;
  int64_t ignore_index = 0;
  float smoothing = 0;           // s: the weight of the uniform part of the target
  float smoothing_over_v = 0;    // s / V
  float z_loss_scale = 0;        // liger.lse_square_scale
  bool argmax = false;           // SY_CE_ARGMAX
  int threads = 32;              // row_threads(vocab_local)
};

// Forward outputs (fp32 loss and lse, int64 argmax or NULL).
struct CeForwardOut {
  float* loss = nullptr;
  float* lse = nullptr;
  int64_t* argmax = nullptr;
};

// Gradient: grad = scale_i * (softmax(z) * (1 + 2 zs lse_i) - q). `scale` is grad_scale
// (forward) or grad_loss (backward); `lse` is read by the gradient kernel (not by the fused one,
// which computes it).
struct CeGradOut {
  const float* scale = nullptr;
  const float* lse = nullptr;
  void* grad = nullptr;
  int64_t grad_stride = 0;
  Dt grad_dt = Dt::F32;
  bool grad_aligned = false;
};

// Tensor-parallel scratch in the workspace, [rows] each unless noted.
struct CeTpScratch {
  float* local_max = nullptr;
  float* global_max = nullptr;
  float* local_sum_exp = nullptr;  // sum of exp(z - local_max) over this rank's columns
  float* packed = nullptr;         // [3 rows]: sum of exp(z - global max) | target logit | sum z
  int64_t* candidates = nullptr;   // local argmax, then its global id or INT64_MAX
};

// Lowest row whose label is outside [0, V) and not ignored, by atomicMin into *first_bad (which
// the caller set to ~0).
cudaError_t launch_ce_check_labels(const CeRows& rows, unsigned long long* first_bad,
                                   cudaStream_t stream);
// tp_size == 1, no gradient: one block per row, online max/sum, loss/lse/argmax.
cudaError_t launch_ce_stats(const CeRows& rows, const CeForwardOut& out, cudaStream_t stream);
// tp_size == 1 with the gradient in forward (Liger's native mode): the same first pass, then a
// second pass of the same block writes the gradient (over the logits when they alias).
cudaError_t launch_ce_fused(const CeRows& rows, const CeForwardOut& out, const CeGradOut& grad,
                            cudaStream_t stream);
// tp_size > 1, before the collectives: this rank's max, sum of exponentials, target logit,
// sum of logits and argmax into the scratch.
cudaError_t launch_ce_partial_stats(const CeRows& rows, const CeTpScratch& scratch,
                                    cudaStream_t stream);
// After the MAX all-reduce: rescale this rank's sum to the global max into packed[0, N), and
// turn the local argmax into a candidate for the MIN all-reduce.
cudaError_t launch_ce_tp_combine(const CeRows& rows, const CeTpScratch& scratch,
                                 cudaStream_t stream);
// After the SUM all-reduce: lse, loss, argmax.
cudaError_t launch_ce_tp_finalize(const CeRows& rows, const CeTpScratch& scratch,
                                  const CeForwardOut& out, cudaStream_t stream);
// The gradient from lse: backward, and the second kernel of a tensor-parallel grad in forward.
cudaError_t launch_ce_gradient(const CeRows& rows, const CeGradOut& grad, cudaStream_t stream);

// ---- normalization --------------------------------------------------------------------------

enum class NormKind : int32_t { Layer = 0, Rms = 1, L2 = 2 };

struct NormForwardArgs {
  NormKind kind = NormKind::Rms;
  int64_t rows = 0;
  int64_t hidden = 0;
  float eps = 0;
  bool zero_centered = false;
  bool llama = false;  // RMSNorm only: round x-hat to x's dtype before multiplying by gamma
  const void* x = nullptr;
  int64_t x_stride = 0;
  Dt x_dt = Dt::F32;
  const void* residual = nullptr;  // x's dtype; NULL without SY_NORM_RESIDUAL
  int64_t residual_stride = 0;
  void* residual_out = nullptr;    // x's dtype
  int64_t residual_out_stride = 0;
  const void* weight = nullptr;
  const void* bias = nullptr;
  Dt w_dt = Dt::F32;
  void* y = nullptr;
  int64_t y_stride = 0;
  Dt y_dt = Dt::F32;
  float* mean = nullptr;  // LayerNorm
  float* rstd = nullptr;
  bool aligned = false;
  int threads = 32;
  int sm_count = 0;  // the device's SMs: sizes the ring kernels' grid (0: register kernels only)
};

struct NormBackwardArgs {
  NormKind kind = NormKind::Rms;
  int64_t rows = 0;
  int64_t hidden = 0;
  bool zero_centered = false;
  bool memory_efficient = false;
  bool llama = false;
  const void* dy = nullptr;
  int64_t dy_stride = 0;
  Dt y_dt = Dt::F32;
  const void* x_or_y = nullptr;
  int64_t x_or_y_stride = 0;
  Dt x_or_y_dt = Dt::F32;
  const void* weight = nullptr;
  const void* bias = nullptr;
  Dt w_dt = Dt::F32;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  const void* d_residual_out = nullptr;  // x's dtype
  int64_t d_residual_out_stride = 0;
  void* dx = nullptr;
  int64_t dx_stride = 0;
  Dt x_dt = Dt::F32;
  float* dweight_partial = nullptr;  // [blocks, hidden] or NULL: no dgamma wanted
  float* dbias_partial = nullptr;    // [blocks, hidden] or NULL: no dbeta wanted
  int rows_per_block = kNormRowsPerBlock;  // norm_rows_per_block(rows, hidden)
  bool aligned = false;
  int threads = 32;
  int sm_count = 0;  // the device's SMs: sizes the ring kernels' grid (0: register kernels only)
};

// Chunks each thread of a row block owns.
inline int64_t chunks_per_thread(int64_t columns) {
  const int64_t chunks = (columns + kChunk - 1) / kChunk;
  const int threads = row_threads(columns);
  return (chunks + threads - 1) / threads;
}
// Dynamic shared memory of the norm backward kernel: the block's dgamma/dbeta sums, one float
// per owned column slot and accumulator.
inline int64_t norm_backward_shared_bytes(int64_t hidden, bool dweight, bool dbias) {
  const int64_t slots = chunks_per_thread(hidden) * kChunk * row_threads(hidden);
  return slots * 4 * ((dweight ? 1 : 0) + (dbias ? 1 : 0));
}
// Rows per dgamma/dbeta partial block. 64 where the backward holds at most 2 blocks per SM and
// the 32-row partials take two rounds of them anyway (kNormLongBlock*: e.g. [16384, 8192] bf16
// LayerNorm on an H200, 264 resident blocks: 512 partials of 32 rows or 256 of 64 have the same
// critical path of 64 rows a block, and the latter write and re-read half the fp32 partial rows,
// 16 MiB instead of 32); else 32, which keeps small batches spread over the SMs. Liger's Triton
// kernel takes ceil(rows / SMs) rows a program, so longer blocks are, if anything, closer to it.
inline int norm_rows_per_block(int64_t rows, int64_t hidden) {
  const bool long_blocks = hidden > kNormLongBlockMinHidden &&
                           hidden <= kNormLongBlockMaxHidden && rows > kNormLongBlockMinRows;
  return long_blocks ? kNormLongRowsPerBlock : kNormRowsPerBlock;
}
// Partial rows of the backward (the workspace's [blocks, hidden] and the finalize's block count).
inline int64_t norm_backward_blocks(int64_t rows, int rows_per_block) {
  return (rows + rows_per_block - 1) / rows_per_block;
}
// Hopper's opt-in shared memory per block (GPU.md: 227 KB), less what the kernel declares.
constexpr int64_t kMaxDynamicSharedBytes = 227 * 1024 - 1024;

cudaError_t launch_norm_forward(const NormForwardArgs& args, cudaStream_t stream);
cudaError_t launch_norm_backward(const NormBackwardArgs& args, cudaStream_t stream);
// out[j] (+)= sum over blocks of partial[b, j], in block order, rounded once to out_dt
// (accumulate: out is float32 and the sum is added to it).
cudaError_t launch_norm_weight_grad(const float* partial, int64_t blocks, int64_t hidden,
                                    void* out, Dt out_dt, bool accumulate, cudaStream_t stream);

}  // namespace switchyard::liger

#endif
