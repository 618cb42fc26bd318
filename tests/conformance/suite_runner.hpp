// Running the suite from a test: results kept, text kept, environment isolated.
#ifndef SWITCHYARD_TESTS_CONFORMANCE_SUITE_RUNNER_HPP
#define SWITCHYARD_TESTS_CONFORMANCE_SUITE_RUNNER_HPP

#include <string>
#include <switchyard/conformance/conformance.hpp>
#include <vector>

namespace switchyard::test {

struct SuiteRun {
  conformance::Summary summary;
  std::vector<conformance::CaseResult> results;
  std::string text;  // what the TextReporter printed

  const conformance::CaseResult* find(const std::string& name) const;
  std::vector<const conformance::CaseResult*> with(conformance::Outcome outcome) const;
  // Every FAIL line, for a test's failure message.
  std::string failures() const;
  std::string last_line() const;
};

// Path of a fixture plugin built by tests/conformance ("good", "unwritten", ...).
std::string conformance_fixture(const std::string& defect);

// Runs the suite with an empty environment (nothing from the caller's SWITCHYARD_*).
SuiteRun run_suite(conformance::ConformanceOptions options);
SuiteRun run_suite(const std::string& plugin, const std::string& filter = "");

}  // namespace switchyard::test

#endif
