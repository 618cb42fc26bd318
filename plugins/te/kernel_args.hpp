// What the host hands te's kernels: plain structs passed by value, with no CUDA or DLPack
// types, so that the .cpp side (validation, planning) and the .cu side (kernels) share them.
#ifndef SWITCHYARD_TE_KERNEL_ARGS_HPP
#define SWITCHYARD_TE_KERNEL_ARGS_HPP

#include "te_math.hpp"

#include <cstdint>

namespace switchyard::te {

// Data dtypes as the kernels see them.
enum class DType : int32_t { F32 = 0, BF16 = 1, F16 = 2 };

inline int element_bytes(DType d) { return d == DType::F32 ? 4 : 2; }

// The per-row statistics one rank contributes to the tensor-parallel all-gather (24 bytes,
// gathered as 3 int64 per row). The argmax rides in it, as a global id.
struct alignas(8) CeRowStats {
  float max;
  float sum_exp;     // relative to max
  float target;      // the label's logit on the rank that owns it, 0 elsewhere
  float sum_logits;  // label smoothing only
  int64_t argmax;    // global id of this rank's lowest max
};
static_assert(sizeof(CeRowStats) == 24, "CeRowStats is gathered as 3 int64 per row");

// Every cross-entropy kernel takes this; each reads the fields it needs.
struct CeKernelArgs {
  const void* logits = nullptr;  // [rows, vocab_local], row stride logits_stride elements
  int64_t logits_stride = 0;
  void* grad = nullptr;  // [rows, vocab_local], grad dtype; may be logits itself
  int64_t grad_stride = 0;
  const void* labels = nullptr;
  int32_t labels_are_64 = 1;
  float* loss = nullptr;
  float* lse = nullptr;
  int64_t* argmax = nullptr;         // NULL: not requested
  const float* row_scale = nullptr;  // g_i: grad_loss (backward) or grad_scale (forward)
  const float* lse_in = nullptr;     // the row's global lse, for the gradient pass
  CeRowStats* stats = nullptr;       // tensor parallel: [tp_size][rows]
  // tp_size 1 grad in forward (the persistent kernel): the rows claimed so far, in the
  // workspace; zeroed by the launcher before each launch.
  unsigned long long* row_claims = nullptr;
  int64_t rows = 0;
  int64_t vocab_local = 0;
  int64_t vocab_start = 0;
  int64_t vocab_size = 0;
  int64_t ignore_index = 0;
  int32_t ignore = 0;     // SY_CE_IGNORE_INDEX
  int32_t smoothing = 0;  // s != 0: the sum of the logits is needed
  int32_t tp_size = 1;
  int32_t slots = 0;      // fused kernel: chunks per thread kept in shared memory
  int64_t chunks = 0;     // ceil(vocab_local / elements per 16-byte chunk)
  CeScalars scalars{};
  // Slice kernels (ce_slice_kernels.cu): a row is `cluster` slices of `slice_chunks` chunks
  // (the last may be shorter), one block per slice, the blocks of a row one thread-block
  // cluster (Stats, Fused; the Grad mode takes the gradient's own slices, without a cluster).
  int32_t cluster = 1;
  int32_t slice_chunks = 0;
  int64_t row_base = 0;  // the first row of this launch (grids of more than 2^31 - 1 blocks
                         // are cut into several launches)
};

// Normalization forward.
struct NormForwardArgs {
  const void* x = nullptr;
  const void* residual = nullptr;  // NULL without SY_NORM_RESIDUAL
  const void* weight = nullptr;    // NULL for L2
  const void* bias = nullptr;      // NULL: beta = 0
  void* y = nullptr;
  void* residual_out = nullptr;
  float* mean = nullptr;  // LayerNorm only
  float* rstd = nullptr;
  // Distance between rows, in bytes.
  int64_t x_row_bytes = 0, residual_row_bytes = 0, y_row_bytes = 0, residual_out_row_bytes = 0;
  int64_t rows = 0, hidden = 0;
  int32_t kind = 0;  // sy_norm_kind
  DType x_dtype = DType::F32, y_dtype = DType::F32, weight_dtype = DType::F32;
  int32_t zero_centered = 0;
  int32_t vector_ok = 0;  // every row and parameter pointer is aligned for 16-byte access
  float eps = 1e-5f;
  // Streamed rows past each block's first ring-full are claimed from *row_claims (in the
  // workspace: row_claims.hpp); NULL: every block takes rows blockIdx.x + k·gridDim.x.
  unsigned long long* row_claims = nullptr;
};

// Normalization backward. dgamma/dbeta partials are written per chunk of at most rows_per_chunk
// rows (which rows: norm_device.cuh, ChunkRows).
struct NormBackwardArgs {
  const void* dy = nullptr;
  const void* x_or_y = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  const void* d_residual_out = nullptr;
  void* dx = nullptr;
  float* partial_gamma = nullptr;  // [chunk_count][hidden]; NULL: dweight not requested
  float* partial_beta = nullptr;   // [chunk_count][hidden]; NULL: dbias not requested
  // Distance between rows, in bytes.
  int64_t dy_row_bytes = 0, x_or_y_row_bytes = 0, d_residual_out_row_bytes = 0, dx_row_bytes = 0;
  int64_t rows = 0, hidden = 0;
  int64_t rows_per_chunk = 1, chunk_count = 0;
  int32_t kind = 0;
  DType x_dtype = DType::F32, y_dtype = DType::F32, x_or_y_dtype = DType::F32;
  DType weight_dtype = DType::F32;
  int32_t zero_centered = 0;
  int32_t memory_efficient = 0;
  int32_t vector_ok = 0;
};

// Sums the partials of every chunk, in chunk order, into dweight/dbias.
struct NormFinalizeArgs {
  const float* partial_gamma = nullptr;
  const float* partial_beta = nullptr;
  void* dweight = nullptr;  // NULL: not requested
  void* dbias = nullptr;
  int64_t hidden = 0;
  int64_t chunk_count = 0;
  DType grad_dtype = DType::F32;
  int32_t accumulate = 0;  // add into fp32 buffers
};

}  // namespace switchyard::te

#endif
