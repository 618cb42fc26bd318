// `switchyard check <name|path>`: the conformance suite against one plugin.
#include <iostream>
#include <memory>
#include <switchyard/conformance/conformance.hpp>

#include "commands.hpp"
#include "output.hpp"

namespace po = boost::program_options;

namespace switchyard::cli {
namespace {

const char* outcome_word(conformance::Outcome outcome) {
  switch (outcome) {
    case conformance::Outcome::Pass:
      return "pass";
    case conformance::Outcome::Fail:
      return "fail";
    case conformance::Outcome::Skip:
      return "skip";
  }
  return "?";
}

// Collects the results into one JSON document, with a progress line meanwhile (stderr).
class JsonReporter : public conformance::Reporter {
 public:
  void begin(const std::string& plugin, int64_t cases) override {
    plugin_ = plugin;
    progress_ = std::make_unique<Progress>("check " + plugin, cases);
  }
  void report(const conformance::CaseResult& result) override {
    Json item = Json::object();
    item.set("name", result.name)
        .set("outcome", outcome_word(result.outcome))
        .set("detail", result.detail)
        .set("seconds", result.seconds);
    cases_.push(std::move(item));
    progress_->update(++done_, result.name);
  }
  void end(const conformance::Summary& summary) override {
    progress_->finish();
    Json totals = Json::object();
    totals.set("passed", summary.passed)
        .set("failed", summary.failed)
        .set("skipped", summary.skipped)
        .set("line", conformance::summary_line(summary));
    Json json = Json::object();
    json.set("plugin", plugin_).set("cases", std::move(cases_)).set("summary", std::move(totals));
    std::cout << json.dump() << '\n';
  }

 private:
  std::string plugin_;
  int64_t done_ = 0;
  Json cases_ = Json::array();
  std::unique_ptr<Progress> progress_;
};

}  // namespace

int cmd_check(const Args& args) {
  po::options_description own("check options");
  // clang-format off
  own.add_options()
      ("plugin", po::value<std::string>(), "a plugin name on the search path, or a path to a .so")
      ("family", po::value<std::string>(), "only this family: ce | norm")
      ("device", po::value<std::string>(), "only this device: cpu | cuda")
      ("seed", po::value<uint64_t>(),
       "run the seeded cases with this seed only (reproduces a case named .../seedN)")
      ("quick", "fewer sizes, seeds and tensor-parallel widths")
      ("filter", po::value<std::string>(), "only cases whose name contains this text")
      ("failures-only", "print failed and skipped cases, not passed ones");
  // clang-format on
  po::positional_options_description positional;
  positional.add("plugin", 1);
  po::variables_map vm;
  RuntimeOptions runtime_options;
  if (!parse_command_line("check", args, own, vm, runtime_options, &positional)) return 2;
  if (vm.count("help")) {
    std::cout << "Runs the conformance suite: every case the plugin's declared dtypes, devices\n"
                 "and features allow, against the float64 reference of docs/semantics.md, on\n"
                 "every declared device this machine has. One line per case, then\n"
                 "'N passed, M failed, K skipped'. Exit status: 0 when nothing failed, 1\n"
                 "otherwise, 2 for a bad command line.\n\n";
    print_command_help(std::cout, "check", "<name|path> [options]", own);
    return 0;
  }
  if (!vm.count("plugin"))
    return report_error("check",
                        "missing the plugin to check: give a name on the search path or a path to "
                        "a .so, e.g. 'switchyard check native' (see 'switchyard list')",
                        2);

  conformance::ConformanceOptions options;
  options.plugin = vm["plugin"].as<std::string>();
  options.runtime = runtime_options;
  options.quick = vm.count("quick") > 0;
  if (vm.count("filter")) options.filter = vm["filter"].as<std::string>();
  if (vm.count("seed")) options.seeds = {vm["seed"].as<uint64_t>()};
  if (vm.count("family")) {
    const std::string family = vm["family"].as<std::string>();
    if (family == "ce" || family == "cross_entropy")
      options.families = {Family::CrossEntropy};
    else if (family == "norm")
      options.families = {Family::Norm};
    else
      return report_error("check",
                          "--family is '" + family + "', expected ce or norm" +
                              did_you_mean(family, {"ce", "norm"}),
                          2);
  }
  if (vm.count("device")) {
    const std::string device = vm["device"].as<std::string>();
    if (device == "cpu")
      options.devices = {kDLCPU};
    else if (device == "cuda")
      options.devices = {kDLCUDA};
    else
      return report_error("check",
                          "--device is '" + device + "', expected cpu or cuda" +
                              did_you_mean(device, {"cpu", "cuda"}),
                          2);
  }

  conformance::Summary summary;
  if (vm.count("json")) {
    JsonReporter reporter;
    summary = conformance::run_conformance(options, reporter);
  } else {
    conformance::TextReporter reporter(std::cout, vm.count("failures-only") == 0);
    summary = conformance::run_conformance(options, reporter);
  }
  return summary.failed == 0 ? 0 : 1;
}

}  // namespace switchyard::cli
