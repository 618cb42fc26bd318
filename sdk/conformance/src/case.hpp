// What the case files share: how a case ends (pass detail, skip, failure), the collection of
// failures within a case, and binding through the Runtime with the suite's refusal rules.
#ifndef SWITCHYARD_CONFORMANCE_CASE_HPP
#define SWITCHYARD_CONFORMANCE_CASE_HPP

#include <cstdint>
#include <functional>
#include <string>
#include <switchyard/switchyard.hpp>
#include <vector>

namespace switchyard::conformance {

// Thrown from inside a case.
struct CaseSkip {
  std::string reason;
};
struct CaseFailure {
  std::string message;
};

// One entry of the case list. `run` returns the detail shown on PASS, or throws CaseSkip /
// CaseFailure. When skip_reason is set the case is reported as skipped without running.
struct Case {
  std::string name;
  std::function<std::string()> run;
  std::string skip_reason;
};

struct CaseOptions {
  std::vector<uint64_t> seeds;  // never empty
  bool quick = false;
};

// The failures found in one case; a case checks everything it can and then reports them all.
class Failures {
 public:
  void add(std::string message) { messages_.push_back(std::move(message)); }
  bool empty() const { return messages_.empty(); }
  // Throws CaseFailure joining the messages, when there are any.
  void throw_if_any() const;

 private:
  std::vector<std::string> messages_;
};

// A call that failed: the status and the message of the switchyard::Error.
struct CallError {
  sy_status status = SY_OK;
  std::string message;
  std::string describe() const;  // "SY_ERR_UNSUPPORTED: <message>"
};

// Runs bind() (a Runtime::cross_entropy / norm call). A switchyard::Error with
// SY_ERR_UNSUPPORTED or SY_ERR_UNAVAILABLE is a refusal: a skip with the plugin's reason, or
// a failure when `declared` is non-empty (the case only uses what the plugin declared, so it
// must be served). Any other error is a failure.
template <class Op, class Bind>
Op bind_operator(Bind&& bind, const std::string& declared) {
  try {
    return bind();
  } catch (const Error& e) {
    const bool refusal = e.status() == SY_ERR_UNSUPPORTED || e.status() == SY_ERR_UNAVAILABLE;
    if (refusal && (declared.empty() || e.status() == SY_ERR_UNAVAILABLE))
      throw CaseSkip{std::string("refused: ") + e.what()};
    if (refusal)
      throw CaseFailure{"the plugin declares " + declared + " but refused this problem (" +
                        status_name(e.status()) + "): " + e.what()};
    throw CaseFailure{std::string("binding failed with ") + status_name(e.status()) + ": " +
                      e.what()};
  }
}

// Names of capability bits, comma-separated ("label_smoothing, argmax").
std::string ce_feature_names(uint32_t features);
std::string norm_feature_names(uint32_t features);

// Joins with a separator.
std::string join(const std::vector<std::string>& parts, const std::string& separator);

// Case list builders (ce_cases.cpp, norm_cases.cpp). `info` is what the plugin declares.
std::vector<Case> ce_cases(const Runtime& runtime, const FamilyInfo& info, DLDevice device,
                           DLDataType dtype, const CaseOptions& options);
std::vector<Case> norm_cases(const Runtime& runtime, const FamilyInfo& info, DLDevice device,
                             DLDataType dtype, const CaseOptions& options);

}  // namespace switchyard::conformance

#endif
