// Source generation for the cross-entropy kernels, specialised on the logits/grad/label
// dtypes, Vp and the flags that change the inner loops (smoothing, argmax).
//
// One module holds all five kernels of a problem, so forward and backward share one compile:
//   sy_ce_check_labels  one thread per row: lowest row whose label is outside [0, V)
//   sy_ce_max           grid (N, chunks): row max and its lowest column (the argmax key)
//   sy_ce_sum           grid (N, chunks): sum exp(z - max), target logit, sum (z - max)
//   sy_ce_loss          one thread per row: lse, loss, argmax
//   sy_ce_grad          grid (N, chunks): g * (softmax - q), rounded once to the grad dtype
// A row is split into chunks of at most kMaxChunk columns (fixed by Vp alone, so a row's
// result never depends on the batch); the last block of a row to finish combines the chunks'
// partial results in chunk order (deterministic).
#ifndef SWITCHYARD_FUSED_JIT_CE_SOURCE_HPP
#define SWITCHYARD_FUSED_JIT_CE_SOURCE_HPP

#include "dtype.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::fused::jit {

struct CeSpecialization {
  DType logits = DType::F32;
  DType grad = DType::F32;
  bool labels64 = true;
  int64_t vocab_local = 0;  // Vp
  bool smoothing = false;   // the sum of (z - max) is needed
  bool argmax = false;

  bool operator==(const CeSpecialization& o) const {
    return logits == o.logits && grad == o.grad && labels64 == o.labels64 &&
           vocab_local == o.vocab_local && smoothing == o.smoothing && argmax == o.argmax;
  }
  // "cross_entropy logits=bf16 grad=bf16 labels=int64 Vp=131072 smoothing argmax"
  std::string description() const;
};

// How the kernels cover a row: derived from Vp and the logits dtype only.
struct CeLayout {
  static constexpr int64_t kMaxChunk = 16384;  // columns per block, at most
  int threads = 0;     // per block (grid kernels)
  int vec = 0;         // elements per vector access (16 bytes of logits)
  int64_t chunk = 0;   // columns per block, a multiple of threads * vec
  int chunks = 0;      // blocks per row
  int iters = 0;       // vector groups per thread per chunk

  static CeLayout of(const CeSpecialization& spec);
};

inline constexpr int kCeRowThreads = 256;  // block size of the one-thread-per-row kernels

// Kernel names in the module, in this order.
enum CeKernel { kCeCheckLabels = 0, kCeMax, kCeSum, kCeLoss, kCeGrad, kCeKernelCount };
const std::vector<std::string>& ce_kernel_names();

// The whole CUDA C++ source (prelude included) for one specialisation.
std::string ce_source(const CeSpecialization& spec);

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_CE_SOURCE_HPP
