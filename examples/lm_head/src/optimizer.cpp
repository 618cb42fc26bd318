#include <switchyard/lm_head/optimizer.hpp>

#include <switchyard/switchyard.hpp>

namespace switchyard::lm_head {
namespace {

class Sgd final : public Optimizer {
 public:
  Sgd(float lr, const Device& device) : lr_(lr), device_(device) {}
  void step(const std::vector<Parameter>& params) override {
    for (const Parameter& p : params) {
      device_.kernels().sgd_step(p.value->data<float>(), p.grad->data<float>(),
                                 p.value->numel(), lr_);
    }
  }

 private:
  float lr_;
  const Device& device_;
};

class Adam final : public Optimizer {
 public:
  Adam(float lr, const Device& device) : device_(device) { hyper_.lr = lr; }
  void step(const std::vector<Parameter>& params) override {
    if (moments_.empty()) {
      for (const Parameter& p : params) {
        moments_.push_back({Tensor(device_, kFloat32, p.value->shape()),
                            Tensor(device_, kFloat32, p.value->shape())});
      }
    }
    if (moments_.size() != params.size()) {
      throw Error(SY_ERR_INTERNAL, "Adam: expected the same " + std::to_string(moments_.size()) +
                                       " parameters every step, got " +
                                       std::to_string(params.size()));
    }
    ++hyper_.step;
    for (size_t i = 0; i < params.size(); ++i) {
      device_.kernels().adam_step(params[i].value->data<float>(), params[i].grad->data<float>(),
                                  moments_[i].first.data<float>(),
                                  moments_[i].second.data<float>(), params[i].value->numel(),
                                  hyper_);
    }
  }

 private:
  const Device& device_;
  AdamHyper hyper_{1e-2f, 0.9f, 0.999f, 1e-8f, 0};
  std::vector<std::pair<Tensor, Tensor>> moments_;  // first and second moment per parameter
};

}  // namespace

const char* optimizer_name(OptimizerKind kind) {
  return kind == OptimizerKind::Sgd ? "sgd" : "adam";
}

OptimizerKind parse_optimizer(const std::string& name) {
  if (name == "sgd") return OptimizerKind::Sgd;
  if (name == "adam") return OptimizerKind::Adam;
  throw Error(SY_ERR_INVALID_ARGUMENT,
              "--optimizer " + name + ": expected 'sgd' or 'adam'.");
}

double default_learning_rate(OptimizerKind kind) {
  return kind == OptimizerKind::Sgd ? 1.0 : 1e-2;
}

std::unique_ptr<Optimizer> make_optimizer(OptimizerKind kind, double learning_rate,
                                          const Device& device) {
  if (!(learning_rate > 0)) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "--lr " + std::to_string(learning_rate) + ": expected a learning rate > 0.");
  }
  const float lr = static_cast<float>(learning_rate);
  if (kind == OptimizerKind::Sgd) return std::make_unique<Sgd>(lr, device);
  return std::make_unique<Adam>(lr, device);
}

}  // namespace switchyard::lm_head
