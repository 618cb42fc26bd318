// One rank's replica of the LM head:
//   token embedding E[vocab, H] -> norm (selected backend) -> projection W[H, vocab] ->
//   vocab-parallel cross entropy (selected backend),
// and the backward pass through all of it. Under tensor parallelism each rank holds a
// contiguous vocabulary shard of W (columns [vocab_start, vocab_start + vocab_local)); E and
// the norm's weights are replicated and stay bit-identical on every rank because the hidden
// gradient is all-reduced before the norm's backward.
#ifndef SWITCHYARD_LM_HEAD_MODEL_HPP
#define SWITCHYARD_LM_HEAD_MODEL_HPP

#include <switchyard/lm_head/data.hpp>
#include <switchyard/lm_head/device.hpp>
#include <switchyard/lm_head/tensor.hpp>
#include <switchyard/switchyard.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::lm_head {

struct VocabShard {
  int64_t vocab_start = 0;
  int64_t vocab_local = 0;
};

// Contiguous shards of [0, vocab) for `parts` ranks; when vocab % parts != 0 the first
// vocab % parts ranks hold one column more (unequal splits are part of the contract).
std::vector<VocabShard> split_vocab(int64_t vocab, int32_t parts);

// "LayerNorm" | "RMSNorm" | "L2Norm" -> sy_norm_kind. Throws Error(INVALID_ARGUMENT).
sy_norm_kind parse_norm_kind(const std::string& name);

struct ModelConfig {
  int64_t vocab = 256;
  int64_t hidden = 64;
  int64_t rows = 256;  // tokens per step
  sy_norm_kind norm_kind = SY_NORM_RMS;
  float norm_eps = 1e-5f;
  float projection_init_std = 0.02f;  // W starts small: the first loss is close to log(vocab)
  uint64_t seed = 1;
};

// The problems the backends are bound to (all fp32, labels int64).
sy_ce_problem cross_entropy_problem(const ModelConfig& config, VocabShard shard,
                                    int32_t tp_size, DLDevice device);
sy_norm_problem norm_problem(const ModelConfig& config, DLDevice device);

class Model {
 public:
  // `cross_entropy` and `norm` are bound to the problems above for this rank. `device` and
  // `tp` (this rank's communicator, NULL for a single rank) are borrowed and must outlive the
  // model.
  Model(const Device& device, const ModelConfig& config, VocabShard shard,
        CrossEntropy cross_entropy, Norm norm, const sy_comm* tp);

  // Forward and backward for one batch: every parameter's gradient is overwritten with the
  // gradient of the batch's mean loss. Returns that mean loss (summed in double).
  double forward_backward(const Batch& batch);

  // Trainable parameters with their gradients, in a fixed order.
  std::vector<Parameter> parameters();

  const ModelConfig& config() const { return config_; }
  VocabShard shard() const { return shard_; }

 private:
  void all_reduce_hidden_gradient();

  const Device& device_;
  ModelConfig config_;
  VocabShard shard_;
  CrossEntropy cross_entropy_;
  Norm norm_;
  const sy_comm* tp_;

  // parameters and gradients
  Tensor embedding_, embedding_grad_;   // [vocab, H]
  Tensor norm_weight_, norm_weight_grad_;  // [H]; empty for L2Norm
  Tensor norm_bias_, norm_bias_grad_;      // [H]; LayerNorm only
  Tensor projection_, projection_grad_;    // [H, vocab_local]
  // per-step activations and scratch
  Tensor inputs_, labels_;                 // [N] int64
  Tensor x_, y_, dy_, dx_;                 // [N, H]
  Tensor dy_partial_;                      // [N, H] float64, this rank's vocabulary share
  Tensor norm_mean_, norm_rstd_;           // [N]
  Tensor logits_;                          // [N, vocab_local]; holds the gradient after backward
  Tensor loss_, lse_, grad_loss_;          // [N]
  Tensor ce_workspace_, norm_workspace_;
};

}  // namespace switchyard::lm_head

#endif
