#include <ostream>
#include <switchyard/conformance/conformance.hpp>

namespace switchyard::conformance {

const char* outcome_name(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::Pass:
      return "PASS";
    case Outcome::Fail:
      return "FAIL";
    case Outcome::Skip:
      return "SKIP";
  }
  return "?";
}

std::string summary_line(const Summary& summary) {
  return std::to_string(summary.passed) + " passed, " + std::to_string(summary.failed) +
         " failed, " + std::to_string(summary.skipped) + " skipped";
}

TextReporter::TextReporter(std::ostream& out, bool show_passes)
    : out_(out), show_passes_(show_passes) {}

void TextReporter::begin(const std::string& plugin, int64_t cases) {
  out_ << "conformance of " << plugin << ": " << cases << " cases\n";
}

void TextReporter::report(const CaseResult& result) {
  if (result.outcome == Outcome::Pass && !show_passes_) return;
  out_ << outcome_name(result.outcome) << "  " << result.name;
  if (!result.detail.empty()) out_ << "  " << result.detail;
  out_ << "\n" << std::flush;
}

void TextReporter::end(const Summary& summary) {
  out_ << summary_line(summary) << "\n" << std::flush;
}

}  // namespace switchyard::conformance
