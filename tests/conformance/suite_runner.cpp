#include "suite_runner.hpp"

#include <sstream>

#include "test_paths.hpp"

namespace switchyard::test {
namespace {

// Keeps every result and forwards to a TextReporter.
class Recorder : public conformance::Reporter {
 public:
  Recorder(SuiteRun& run, std::ostream& out) : run_(run), text_(out) {}
  void begin(const std::string& plugin, int64_t cases) override { text_.begin(plugin, cases); }
  void report(const conformance::CaseResult& result) override {
    run_.results.push_back(result);
    text_.report(result);
  }
  void end(const conformance::Summary& summary) override { text_.end(summary); }

 private:
  SuiteRun& run_;
  conformance::TextReporter text_;
};

}  // namespace

const conformance::CaseResult* SuiteRun::find(const std::string& name) const {
  for (const auto& r : results)
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<const conformance::CaseResult*> SuiteRun::with(conformance::Outcome outcome) const {
  std::vector<const conformance::CaseResult*> out;
  for (const auto& r : results)
    if (r.outcome == outcome) out.push_back(&r);
  return out;
}

std::string SuiteRun::failures() const {
  std::string out;
  for (const auto* r : with(conformance::Outcome::Fail))
    out += "FAIL  " + r->name + "  " + r->detail + "\n";
  return out;
}

std::string SuiteRun::last_line() const {
  std::string body = text;
  while (!body.empty() && body.back() == '\n') body.pop_back();
  return body.substr(body.rfind('\n') + 1);
}

std::string conformance_fixture(const std::string& defect) {
  const std::string name = "conformance_" + defect;
  return fixture_dir() + "/" + name + "/libswitchyard-" + name + ".so";
}

SuiteRun run_suite(conformance::ConformanceOptions options) {
  if (!options.runtime.environment)
    options.runtime.environment = std::map<std::string, std::string>{};
  SuiteRun run;
  std::ostringstream out;
  Recorder recorder(run, out);
  run.summary = conformance::run_conformance(options, recorder);
  run.text = out.str();
  return run;
}

SuiteRun run_suite(const std::string& plugin, const std::string& filter) {
  conformance::ConformanceOptions options;
  options.plugin = plugin;
  options.filter = filter;
  return run_suite(std::move(options));
}

}  // namespace switchyard::test
