// Runs the fused plugin's host sequences (ce_run, norm_run) with the generated kernels on the
// CPU emulator, over host tensors, across tensor-parallel ranks of a ThreadGroup, and compares
// with the float64 references and tolerances of the conformance suite.
#ifndef SWITCHYARD_TESTS_FUSED_KERNEL_CHECKS_HPP
#define SWITCHYARD_TESTS_FUSED_KERNEL_CHECKS_HPP

#include <switchyard/loss.h>
#include <switchyard/norm.h>
#include <switchyard/plugin_helpers.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::fused::test {

// ---- cross entropy ------------------------------------------------------------------------

struct CeCase {
  DLDataType logits = sy::kF32;
  DLDataType grad = sy::kF32;
  DLDataType labels = sy::kI64;
  int64_t rows = 7;
  int64_t vocab = 50;
  std::vector<int64_t> split;  // columns per rank; empty: one rank with all of them
  float alpha = 0.0f;
  sy_smoothing smoothing = SY_SMOOTHING_MEGATRON;
  uint32_t flags = 0;
  int64_t ignore_index = -100;
  bool strided = false;           // rows padded by a few elements
  bool misaligned = false;        // data 2 bytes (16-bit) or 4 bytes (fp32) off 16-byte alignment
  bool aliased = false;           // grad-in-forward writes over the logits
  bool backward_in_place = false;
  bool ties = false;              // several columns (on several ranks) share the row max
  bool unowned_labels = false;    // a few labels outside [0, V) (not refused without the flag)
  int64_t bad_label_row = -1;     // with SY_CE_CHECK_LABELS: this row gets label V + 5
  uint64_t seed = 1;
  std::string describe() const;
};

struct CeRun {
  // Per rank.
  std::vector<sy_status> status;
  std::vector<std::string> message;
  std::vector<int64_t> collectives;
  std::vector<int32_t> stated_collectives;
  std::vector<std::vector<std::string>> launched;
  std::vector<int64_t> host_reads;
  // Global, assembled from the ranks (rank 0's copy for the row quantities).
  std::vector<double> loss, lse;
  std::vector<int64_t> argmax;
  std::vector<double> forward_grad;   // [N, V] with SY_CE_GRAD_IN_FORWARD
  std::vector<double> backward_grad;  // [N, V] after backward
  std::vector<std::vector<double>> loss_by_rank, lse_by_rank;
  std::vector<std::vector<int64_t>> argmax_by_rank;
  // Inputs, as the kernels saw them.
  std::vector<double> logits;  // [N, V]
  std::vector<int64_t> labels;
  std::vector<double> grad_scale, grad_loss, lse_for_backward;
};

// Forward (and backward unless grad-in-forward, when `backward`), every rank in its thread.
CeRun run_ce(const CeCase& c, bool backward = true);

// Empty when the run matches the references of docs/semantics.md; otherwise what does not.
std::string check_ce(const CeCase& c, const CeRun& run);

// ---- normalization ------------------------------------------------------------------------

struct NormCase {
  sy_norm_kind kind = SY_NORM_RMS;
  int64_t rows = 5;
  int64_t hidden = 127;
  DLDataType x = sy::kF32, y = sy::kF32, weight = sy::kF32, grad_weight = sy::kF32;
  uint32_t flags = 0;
  bool bias = true;      // LayerNorm: pass beta (and ask for dbeta)
  bool dweight = true;   // ask for dgamma
  bool strided = false;
  bool misaligned = false;
  bool dx_in_place = false;  // dx written over dy
  float eps = 1e-5f;
  uint64_t seed = 1;
  std::string describe() const;
};

struct NormRun {
  sy_status status = SY_OK;
  std::string message;
  std::vector<std::string> launched;
  // Outputs.
  std::vector<double> y, h, mean, rstd, dx, dgamma, dbeta;
  // Inputs as the kernels saw them.
  std::vector<double> x, residual, gamma, beta, dy, d_residual_out, dgamma_initial, dbeta_initial;
  std::vector<double> x_or_y;
};

NormRun run_norm(const NormCase& c);
std::string check_norm(const NormCase& c, const NormRun& run);

}  // namespace switchyard::fused::test

#endif  // SWITCHYARD_TESTS_FUSED_KERNEL_CHECKS_HPP
