#include "case.hpp"

#include <switchyard/loss.h>
#include <switchyard/norm.h>

#include <algorithm>
#include <initializer_list>
#include <utility>

namespace switchyard::conformance {

void Failures::throw_if_any() const {
  if (messages_.empty()) return;
  // A broken plugin fails the same way on every rank and tensor: the first few say it all.
  constexpr size_t kShown = 3;
  std::vector<std::string> shown(messages_.begin(),
                                 messages_.begin() + std::min(kShown, messages_.size()));
  std::string text = join(shown, "; ");
  if (messages_.size() > kShown)
    text += "; and " + std::to_string(messages_.size() - kShown) + " more";
  throw CaseFailure{text};
}

std::string CallError::describe() const {
  return std::string(status_name(status)) + ": " + message;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t k = 0; k < parts.size(); ++k) out += (k ? separator : "") + parts[k];
  return out;
}

namespace {

std::string bit_names(uint32_t bits,
                      std::initializer_list<std::pair<uint32_t, const char*>> names) {
  std::vector<std::string> out;
  for (const auto& [bit, name] : names)
    if ((bits & bit) != 0) out.push_back(name);
  return join(out, ", ");
}

}  // namespace

std::string ce_feature_names(uint32_t features) {
  return bit_names(features, {{SY_CE_FEATURE_LABEL_SMOOTHING, "label_smoothing"},
                              {SY_CE_FEATURE_IGNORE_INDEX, "ignore_index"},
                              {SY_CE_FEATURE_ARGMAX, "argmax"},
                              {SY_CE_FEATURE_GRAD_IN_FORWARD, "grad_in_forward"},
                              {SY_CE_FEATURE_TENSOR_PARALLEL, "tensor_parallel"},
                              {SY_FEATURE_GRAPH_CAPTURE, "graph_capture"}});
}

std::string norm_feature_names(uint32_t features) {
  return bit_names(features, {{SY_NORM_FEATURE_LAYER, "layer_norm"},
                              {SY_NORM_FEATURE_RMS, "rms_norm"},
                              {SY_NORM_FEATURE_L2, "l2_norm"},
                              {SY_NORM_FEATURE_ZERO_CENTERED_GAMMA, "zero_centered_gamma"},
                              {SY_NORM_FEATURE_RESIDUAL, "residual"},
                              {SY_NORM_FEATURE_MEMORY_EFFICIENT, "memory_efficient"},
                              {SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT, "accumulate_grad_weight"},
                              {SY_NORM_FEATURE_SM_MARGIN, "sm_margin"},
                              {SY_FEATURE_GRAPH_CAPTURE, "graph_capture"}});
}

}  // namespace switchyard::conformance
