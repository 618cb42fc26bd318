// Source generation for LayerNorm / RMSNorm / L2Norm, specialised on the kind, H (a
// compile-time constant: a row lives in registers, kIters x kVec values per thread), the four
// dtypes and the flags that change the kernels' code.
//
// One module per specialisation holds the three kernels:
//   sy_norm_forward   one block per row: h (= x + residual, rounded), statistics, y
//   sy_norm_backward  one block per chunk of kRowsPerChunk consecutive rows: dx of each row,
//                     and the chunk's partial dgamma/dbeta (summed in row order) into the
//                     workspace
//   sy_norm_dweight   one thread per column: sums the chunks' partials in chunk order
// The chunking depends on H alone, so dgamma/dbeta are summed in a fixed order
// (deterministic), and y/dx/mean/rstd of a row depend only on that row (batch-invariant).
#ifndef SWITCHYARD_FUSED_JIT_NORM_SOURCE_HPP
#define SWITCHYARD_FUSED_JIT_NORM_SOURCE_HPP

#include "dtype.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::fused::jit {

enum class NormKind : int { Layer = 0, Rms = 1, L2 = 2 };

struct NormSpecialization {
  NormKind kind = NormKind::Rms;
  int64_t hidden = 0;  // H
  DType x = DType::F32;
  DType y = DType::F32;
  DType weight = DType::F32;       // gamma/beta (unused for L2)
  DType grad_weight = DType::F32;  // dgamma/dbeta (unused for L2)
  bool zero_centered = false;      // gamma_eff = 1 + gamma
  bool residual = false;           // h = round(x + residual), written to residual_out
  bool memory_efficient = false;   // backward reads y instead of x
  bool accumulate = false;         // dgamma/dbeta += (float32)

  bool operator==(const NormSpecialization& o) const {
    return kind == o.kind && hidden == o.hidden && x == o.x && y == o.y && weight == o.weight &&
           grad_weight == o.grad_weight && zero_centered == o.zero_centered &&
           residual == o.residual && memory_efficient == o.memory_efficient &&
           accumulate == o.accumulate;
  }
  // The same specialisation with the fields that cannot matter (L2's weights) normalised,
  // so that equal kernels get equal keys.
  NormSpecialization canonical() const;
  std::string description() const;
};

struct NormLayout {
  static constexpr int64_t kMaxHidden = 65536;  // 64 values per thread at 1024 threads
  int threads = 0;         // per block
  int vec = 0;             // elements per vector access (16 bytes of x)
  int iters = 0;           // vector groups per thread
  int rows_per_chunk = 0;  // rows of one backward block

  static NormLayout of(const NormSpecialization& spec);
  int64_t chunks(int64_t rows) const { return (rows + rows_per_chunk - 1) / rows_per_chunk; }
};

inline constexpr int kNormColumnThreads = 256;  // block size of sy_norm_dweight

enum NormKernel { kNormForward = 0, kNormBackward, kNormDWeight, kNormKernelCount };
const std::vector<std::string>& norm_kernel_names();

std::string norm_source(const NormSpecialization& spec);

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_NORM_SOURCE_HPP
