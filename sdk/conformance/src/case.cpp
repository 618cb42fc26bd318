#include "case.hpp"

#include <switchyard/capability_names.hpp>

#include <algorithm>

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

std::string ce_feature_names(uint32_t features) {
  return join(sy::ce_feature_names(features), ", ");
}

std::string norm_feature_names(uint32_t features) {
  return join(sy::norm_feature_names(features), ", ");
}

}  // namespace switchyard::conformance
