// The LM head's forward and backward for one rank.
#include <switchyard/lm_head/model.hpp>
#include <switchyard/lm_head/rng.hpp>

#include <string>

namespace switchyard::lm_head {

std::vector<VocabShard> split_vocab(int64_t vocab, int32_t parts) {
  if (parts < 1 || vocab < parts) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "--tp " + std::to_string(parts) + ": expected 1 <= tp <= vocabulary size (" +
                    std::to_string(vocab) + "), so that every rank holds at least one column.");
  }
  std::vector<VocabShard> shards(static_cast<size_t>(parts));
  const int64_t base = vocab / parts;
  const int64_t larger = vocab % parts;
  int64_t start = 0;
  for (int32_t r = 0; r < parts; ++r) {
    const int64_t local = base + (r < larger ? 1 : 0);
    shards[static_cast<size_t>(r)] = VocabShard{start, local};
    start += local;
  }
  return shards;
}

sy_norm_kind parse_norm_kind(const std::string& name) {
  if (name == "LayerNorm") return SY_NORM_LAYER;
  if (name == "RMSNorm") return SY_NORM_RMS;
  if (name == "L2Norm") return SY_NORM_L2;
  throw Error(SY_ERR_INVALID_ARGUMENT, "normalization '" + name +
                                           "': expected LayerNorm, RMSNorm or L2Norm.");
}

sy_ce_problem cross_entropy_problem(const ModelConfig& config, VocabShard shard,
                                    int32_t tp_size, DLDevice device) {
  sy_ce_problem problem{};
  problem.struct_size = sizeof problem;
  problem.rows = config.rows;
  problem.vocab_local = shard.vocab_local;
  problem.vocab_start = shard.vocab_start;
  problem.vocab_size = config.vocab;
  problem.logits_dtype = kFloat32;
  problem.label_dtype = kInt64;
  problem.grad_dtype = kFloat32;
  problem.device = device;
  problem.tp_size = tp_size;
  problem.label_smoothing = 0.0f;
  problem.smoothing = SY_SMOOTHING_MEGATRON;
  problem.ignore_index = -100;
  problem.flags = 0;
  return problem;
}

sy_norm_problem norm_problem(const ModelConfig& config, DLDevice device) {
  sy_norm_problem problem{};
  problem.struct_size = sizeof problem;
  problem.kind = config.norm_kind;
  problem.rows = config.rows;
  problem.hidden = config.hidden;
  problem.eps = config.norm_eps;
  problem.x_dtype = kFloat32;
  problem.y_dtype = kFloat32;
  problem.weight_dtype = kFloat32;
  problem.grad_weight_dtype = kFloat32;
  problem.device = device;
  problem.flags = 0;
  problem.sm_margin = 0;
  return problem;
}

namespace {

// Fills a host vector and uploads it: initialisation runs once, so it need not be a kernel.
template <class Fn>
void initialise(const Device& device, Tensor& tensor, Fn&& value_at) {
  std::vector<float> host(static_cast<size_t>(tensor.numel()));
  for (size_t i = 0; i < host.size(); ++i) host[i] = value_at(static_cast<int64_t>(i));
  device.copy_from_host(tensor.data<void>(), host.data(), tensor.bytes());
}

Tensor workspace(const Device& device, int64_t bytes) {
  return Tensor(device, DLDataType{kDLUInt, 8, 1}, {bytes});
}

}  // namespace

Model::Model(const Device& device, const ModelConfig& config, VocabShard shard,
             CrossEntropy cross_entropy, Norm norm, const sy_comm* tp)
    : device_(device),
      config_(config),
      shard_(shard),
      cross_entropy_(std::move(cross_entropy)),
      norm_(std::move(norm)),
      tp_(tp) {
  const int64_t V = config.vocab, H = config.hidden, N = config.rows, Vp = shard.vocab_local;
  embedding_ = Tensor(device, kFloat32, {V, H});
  embedding_grad_ = Tensor(device, kFloat32, {V, H});
  if (config.norm_kind != SY_NORM_L2) {
    norm_weight_ = Tensor(device, kFloat32, {H});
    norm_weight_grad_ = Tensor(device, kFloat32, {H});
  }
  if (config.norm_kind == SY_NORM_LAYER) {
    norm_bias_ = Tensor(device, kFloat32, {H});  // starts at zero
    norm_bias_grad_ = Tensor(device, kFloat32, {H});
  }
  projection_ = Tensor(device, kFloat32, {H, Vp});
  projection_grad_ = Tensor(device, kFloat32, {H, Vp});

  inputs_ = Tensor(device, kInt64, {N});
  labels_ = Tensor(device, kInt64, {N});
  x_ = Tensor(device, kFloat32, {N, H});
  y_ = Tensor(device, kFloat32, {N, H});
  dy_ = Tensor(device, kFloat32, {N, H});
  dx_ = Tensor(device, kFloat32, {N, H});
  dy_partial_ = Tensor(device, kFloat64, {N, H});
  norm_mean_ = Tensor(device, kFloat32, {N});
  norm_rstd_ = Tensor(device, kFloat32, {N});
  logits_ = Tensor(device, kFloat32, {N, Vp});
  loss_ = Tensor(device, kFloat32, {N});
  lse_ = Tensor(device, kFloat32, {N});
  grad_loss_ = Tensor(device, kFloat32, {N});
  ce_workspace_ = workspace(device, cross_entropy_.workspace_size());
  norm_workspace_ = workspace(device, norm_.workspace_size());

  // Every element's initial value depends on its global position only, so any vocabulary
  // split starts from the same model.
  const uint64_t seed = config.seed;
  initialise(device, embedding_, [&](int64_t i) {
    return static_cast<float>(random_normal(seed, Stream::Embedding, static_cast<uint64_t>(i)));
  });
  if (!norm_weight_.empty()) initialise(device, norm_weight_, [](int64_t) { return 1.0f; });
  initialise(device, projection_, [&](int64_t i) {
    const int64_t k = i / Vp, j = i % Vp;
    const uint64_t global = static_cast<uint64_t>(k * V + shard.vocab_start + j);
    return config.projection_init_std *
           static_cast<float>(random_normal(seed, Stream::Projection, global));
  });
  // d(mean loss)/d(loss_i) = 1/N for every row.
  device.kernels().fill(grad_loss_.data<float>(), N, 1.0f / static_cast<float>(N));
}

std::vector<Parameter> Model::parameters() {
  std::vector<Parameter> params{{"embedding", &embedding_, &embedding_grad_}};
  if (!norm_weight_.empty()) params.push_back({"norm.weight", &norm_weight_, &norm_weight_grad_});
  if (!norm_bias_.empty()) params.push_back({"norm.bias", &norm_bias_, &norm_bias_grad_});
  params.push_back({"projection", &projection_, &projection_grad_});
  return params;
}

double Model::forward_backward(const Batch& batch) {
  const Kernels& k = device_.kernels();
  const int64_t N = config_.rows, H = config_.hidden, Vp = shard_.vocab_local;
  if (static_cast<int64_t>(batch.inputs.size()) != N ||
      static_cast<int64_t>(batch.targets.size()) != N) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "batch: expected " + std::to_string(N) + " inputs and targets, got " +
                    std::to_string(batch.inputs.size()) + " and " +
                    std::to_string(batch.targets.size()));
  }
  device_.copy_from_host(inputs_.data<void>(), batch.inputs.data(), inputs_.bytes());
  device_.copy_from_host(labels_.data<void>(), batch.targets.data(), labels_.bytes());
  const bool layer_norm = config_.norm_kind == SY_NORM_LAYER;

  // ---- forward ----
  k.gather_rows(embedding_.data<float>(), inputs_.data<int64_t>(), N, H, x_.data<float>());

  DLTensor x = x_.dl(), y = y_.dl(), mean = norm_mean_.dl(), rstd = norm_rstd_.dl();
  DLTensor weight = norm_weight_.dl(), bias = norm_bias_.dl();
  sy_norm_forward_args norm_fwd{};
  norm_fwd.struct_size = sizeof norm_fwd;
  norm_fwd.problem = &norm_.problem();
  norm_fwd.x = &x;
  norm_fwd.weight = norm_weight_.empty() ? nullptr : &weight;
  norm_fwd.bias = norm_bias_.empty() ? nullptr : &bias;
  norm_fwd.y = &y;
  norm_fwd.mean = layer_norm ? &mean : nullptr;
  norm_fwd.rstd = &rstd;
  norm_fwd.workspace = norm_workspace_.data<void>();
  norm_fwd.workspace_bytes = norm_workspace_.numel();
  norm_fwd.stream = device_.stream();
  norm_.forward(norm_fwd);

  k.project(y_.data<float>(), projection_.data<float>(), N, H, Vp, logits_.data<float>());

  DLTensor logits = logits_.dl(), labels = labels_.dl(), loss = loss_.dl(), lse = lse_.dl();
  sy_ce_forward_args ce_fwd{};
  ce_fwd.struct_size = sizeof ce_fwd;
  ce_fwd.problem = &cross_entropy_.problem();
  ce_fwd.logits = &logits;
  ce_fwd.labels = &labels;
  ce_fwd.loss = &loss;
  ce_fwd.lse = &lse;
  ce_fwd.workspace = ce_workspace_.data<void>();
  ce_fwd.workspace_bytes = ce_workspace_.numel();
  ce_fwd.tp = tp_;
  ce_fwd.stream = device_.stream();
  cross_entropy_.forward(ce_fwd);
  const double mean_loss = k.mean(loss_.data<float>(), N);

  // ---- backward ----
  // The logits' gradient is written over the logits (in place, as the ABI allows).
  DLTensor grad_loss = grad_loss_.dl();
  sy_ce_backward_args ce_bwd{};
  ce_bwd.struct_size = sizeof ce_bwd;
  ce_bwd.problem = &cross_entropy_.problem();
  ce_bwd.logits = &logits;
  ce_bwd.labels = &labels;
  ce_bwd.lse = &lse;
  ce_bwd.grad_loss = &grad_loss;
  ce_bwd.grad_logits = &logits;
  ce_bwd.workspace = ce_workspace_.data<void>();
  ce_bwd.workspace_bytes = ce_workspace_.numel();
  ce_bwd.stream = device_.stream();
  cross_entropy_.backward(ce_bwd);
  const float* dlogits = logits_.data<float>();

  k.project_grad_weight(y_.data<float>(), dlogits, N, H, Vp, projection_grad_.data<float>());
  k.project_grad_input(dlogits, projection_.data<float>(), N, H, Vp,
                       dy_partial_.data<double>());
  all_reduce_hidden_gradient();
  k.to_float(dy_partial_.data<double>(), N * H, dy_.data<float>());

  DLTensor dy = dy_.dl(), dx = dx_.dl();
  DLTensor dweight = norm_weight_grad_.dl(), dbias = norm_bias_grad_.dl();
  sy_norm_backward_args norm_bwd{};
  norm_bwd.struct_size = sizeof norm_bwd;
  norm_bwd.problem = &norm_.problem();
  norm_bwd.dy = &dy;
  norm_bwd.x_or_y = &x;
  norm_bwd.weight = norm_fwd.weight;
  norm_bwd.bias = norm_fwd.bias;
  norm_bwd.mean = norm_fwd.mean;
  norm_bwd.rstd = &rstd;
  norm_bwd.dx = &dx;
  norm_bwd.dweight = norm_weight_grad_.empty() ? nullptr : &dweight;
  norm_bwd.dbias = norm_bias_grad_.empty() ? nullptr : &dbias;
  norm_bwd.workspace = norm_workspace_.data<void>();
  norm_bwd.workspace_bytes = norm_workspace_.numel();
  norm_bwd.stream = device_.stream();
  norm_.backward(norm_bwd);

  k.fill(embedding_grad_.data<float>(), embedding_grad_.numel(), 0.0f);
  k.scatter_add_rows(dx_.data<float>(), inputs_.data<int64_t>(), N, H,
                     embedding_grad_.data<float>());
  return mean_loss;
}

// Each rank holds dy for its vocabulary share only; the norm's backward needs the sum. It is
// reduced in float64 (in rank order, by the group), so the float it rounds to does not depend
// on how the vocabulary was split.
void Model::all_reduce_hidden_gradient() {
  if (tp_ == nullptr || tp_->size == 1) return;
  sy_error err{};
  err.struct_size = sizeof err;
  double* partial = dy_partial_.data<double>();
  const sy_status status = tp_->all_reduce(tp_->ctx, partial, partial, dy_partial_.numel(),
                                           kFloat64, SY_REDUCE_SUM, device_.stream(), &err);
  if (status != SY_OK) {
    throw Error(status, "rank " + std::to_string(tp_->rank) + ": all-reduce (sum) of the "
                        "hidden-state gradient [" + std::to_string(dy_partial_.numel()) +
                        " float64] failed: " + err.message);
  }
}

}  // namespace switchyard::lm_head
