// Plain SGD and Adam over a model's parameters. Updates are element-wise, so replicated
// parameters that receive identical gradients stay identical on every rank.
#ifndef SWITCHYARD_LM_HEAD_OPTIMIZER_HPP
#define SWITCHYARD_LM_HEAD_OPTIMIZER_HPP

#include <switchyard/lm_head/device.hpp>
#include <switchyard/lm_head/tensor.hpp>

#include <memory>
#include <string>
#include <vector>

namespace switchyard::lm_head {

enum class OptimizerKind { Sgd, Adam };

const char* optimizer_name(OptimizerKind kind);  // "sgd" | "adam"
// "sgd" | "adam". Throws Error(INVALID_ARGUMENT) naming the accepted values.
OptimizerKind parse_optimizer(const std::string& name);
// A learning rate that trains the default model well with this optimizer.
double default_learning_rate(OptimizerKind kind);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one update; `params` must list the same parameters in the same order every step.
  virtual void step(const std::vector<Parameter>& params) = 0;
};

std::unique_ptr<Optimizer> make_optimizer(OptimizerKind kind, double learning_rate,
                                          const Device& device);

}  // namespace switchyard::lm_head

#endif
