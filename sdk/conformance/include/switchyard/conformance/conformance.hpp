// The conformance suite: runs one plugin (by name or .so path) through the public host API
// against the float64 references of docs/semantics.md and reports one line per case.
//
//   switchyard::conformance::ConformanceOptions options;
//   options.plugin = "native";
//   switchyard::conformance::TextReporter reporter(std::cout);
//   auto summary = switchyard::conformance::run_conformance(options, reporter);
//   return summary.failed == 0 ? 0 : 1;
#ifndef SWITCHYARD_CONFORMANCE_CONFORMANCE_HPP
#define SWITCHYARD_CONFORMANCE_CONFORMANCE_HPP

#include <cstdint>
#include <iosfwd>
#include <string>
#include <switchyard/switchyard.hpp>
#include <vector>

namespace switchyard::conformance {

enum class Outcome { Pass, Fail, Skip };
const char* outcome_name(Outcome outcome) noexcept;  // "PASS", "FAIL", "SKIP"

struct CaseResult {
  // "ce/f32/tp2-unequal/smoothing-megatron/seed1"; a whole group skipped at once ends in
  // "/*" ("ce/cuda/*").
  std::string name;
  Outcome outcome = Outcome::Pass;
  // Pass: the problem ("N=7 V=50 Vp=20+30 ..."). Fail: what went wrong, with the worst
  // element (index, got, expected). Skip: the reason.
  std::string detail;
  double seconds = 0;
};

struct Summary {
  int64_t passed = 0;
  int64_t failed = 0;
  int64_t skipped = 0;
};

// Exactly "N passed, M failed, K skipped".
std::string summary_line(const Summary& summary);

// Receives the results as they happen.
class Reporter {
 public:
  virtual ~Reporter() = default;
  // Called once the case list is known (`cases` entries will be reported).
  virtual void begin(const std::string& plugin, int64_t cases) {
    (void)plugin;
    (void)cases;
  }
  virtual void report(const CaseResult& result) = 0;
  virtual void end(const Summary& summary) = 0;
};

// One line per case ("PASS  <name>  <detail>") and the summary line, on `out`.
class TextReporter : public Reporter {
 public:
  explicit TextReporter(std::ostream& out, bool show_passes = true);
  void begin(const std::string& plugin, int64_t cases) override;
  void report(const CaseResult& result) override;
  void end(const Summary& summary) override;

 private:
  std::ostream& out_;
  bool show_passes_;
};

struct ConformanceOptions {
  std::string plugin;  // a backend name on the search path, or a path to a .so
  // Families to check; empty: both.
  std::vector<Family> families;
  // Devices to run on (kDLCPU, kDLCUDA); empty: every device the plugin declares.
  std::vector<DLDeviceType> devices;
  // Seeds of the seeded cases; empty: {1, 2, 3} (just {1} with `quick`).
  std::vector<uint64_t> seeds;
  // Fewer sizes, seeds and TP widths: a smoke test.
  bool quick = false;
  // Only cases whose name contains this text (empty: all).
  std::string filter;
  // Base options for the Runtime (search path, environment, command-line selection flags).
  // The suite sets cross_entropy and norm to `plugin` (and adds a path to plugin_path).
  RuntimeOptions runtime;
};

// Runs the suite. Never throws for a faulty plugin: every problem is a failed case.
Summary run_conformance(const ConformanceOptions& options, Reporter& reporter);

}  // namespace switchyard::conformance

#endif  // SWITCHYARD_CONFORMANCE_CONFORMANCE_HPP
