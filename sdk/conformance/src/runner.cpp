// run_conformance: resolve the plugin through the public host API, build the case list from
// what it declares, run every case and report.
#include <chrono>
#include <filesystem>
#include <memory>
#include <switchyard/conformance/conformance.hpp>

#include "case.hpp"
#include "device_memory.hpp"
#include "dtype_codec.hpp"

namespace switchyard::conformance {
namespace {

bool looks_like_path(const std::string& target) {
  return target.find('/') != std::string::npos ||
         (target.size() > 3 && target.compare(target.size() - 3, 3, ".so") == 0);
}

Case failing_case(const std::string& name, const std::string& message) {
  Case c;
  c.name = name;
  c.run = [message]() -> std::string { throw CaseFailure{message}; };
  return c;
}

Case skipped_case(const std::string& name, const std::string& reason) {
  Case c;
  c.name = name;
  c.skip_reason = reason;
  return c;
}

struct DtypeChoice {
  DLDataType dtype;
  uint32_t bit;
  const char* name;
};
constexpr DtypeChoice kDtypes[] = {{kF32, SY_DTYPE_F32, "float32"},
                                   {kBF16, SY_DTYPE_BF16, "bfloat16"},
                                   {kF16, SY_DTYPE_F16, "float16"}};

class CaseListBuilder {
 public:
  CaseListBuilder(const ConformanceOptions& options, const CaseOptions& case_options)
      : options_(options), case_options_(case_options) {}

  std::vector<Case> build(const Runtime& runtime) {
    const std::string& target = options_.plugin;
    PluginInfo info;
    try {
      info = runtime.inspect(target);
    } catch (const std::exception& e) {
      cases_.push_back(failing_case("plugin/load", "cannot load " + target + ": " + e.what()));
      return std::move(cases_);
    }
    if (info.state != PluginState::Ok && info.state != PluginState::Unavailable) {
      cases_.push_back(failing_case("plugin/load", "plugin " + target + " (" + info.path + ") is " +
                                                       plugin_state_name(info.state) + ": " +
                                                       info.reason));
      return std::move(cases_);
    }
    std::vector<Family> families = options_.families;
    if (families.empty()) families = {Family::CrossEntropy, Family::Norm};
    for (Family family : families) add_family(runtime, info, family);
    return std::move(cases_);
  }

 private:
  void add_family(const Runtime& runtime, const PluginInfo& info, Family family) {
    const bool ce = family == Family::CrossEntropy;
    const std::string prefix = ce ? "ce/" : "norm/";
    FamilyInfo declared = ce ? info.cross_entropy : info.norm;
    if (!declared.offered) {
      cases_.push_back(skipped_case(prefix + "*", std::string("the plugin does not offer the ") +
                                                      family_name(family) + " family"));
      return;
    }
    if (info.state == PluginState::Unavailable) {
      cases_.push_back(
          skipped_case(prefix + "*", "the plugin cannot run on this machine: " + info.reason));
      return;
    }
    try {
      const Selection selection = runtime.select(family);
      declared = ce ? selection.plugin.cross_entropy : selection.plugin.norm;
    } catch (const Error& e) {
      cases_.push_back(failing_case(prefix + "select",
                                    std::string("selecting the plugin for ") + family_name(family) +
                                        " failed (" + status_name(e.status()) + "): " + e.what()));
      return;
    }

    std::vector<DLDeviceType> devices = options_.devices;
    const bool devices_requested = !devices.empty();
    if (devices.empty()) devices = {kDLCPU, kDLCUDA};
    for (DLDeviceType device_type : devices) {
      const bool cuda = device_type == kDLCUDA;
      const std::string device_prefix = prefix + (cuda ? "cuda/" : "");
      if ((declared.devices & SY_DEVICE_BIT(device_type)) == 0) {
        // A device the plugin does not claim is only worth a line when it was asked for, or
        // when it is the CPU (which every machine has).
        if (devices_requested || !cuda)
          cases_.push_back(skipped_case(prefix + (cuda ? "cuda/*" : "cpu/*"),
                                        std::string("the plugin does not declare the ") +
                                            (cuda ? "CUDA" : "CPU") + " device"));
        continue;
      }
      if (device_type != kDLCPU && !cuda) continue;
      if (cuda && !CudaRuntime::instance().available()) {
        cases_.push_back(skipped_case(device_prefix + "*", CudaRuntime::instance().reason()));
        continue;
      }
      const DLDevice device{device_type, 0};
      for (const DtypeChoice& d : kDtypes) {
        if ((declared.dtypes & d.bit) == 0) {
          cases_.push_back(skipped_case(device_prefix + short_dtype_name(d.dtype) + "/*",
                                        std::string("the plugin does not declare ") + d.name));
          continue;
        }
        auto more = ce ? ce_cases(runtime, declared, device, d.dtype, case_options_)
                       : norm_cases(runtime, declared, device, d.dtype, case_options_);
        for (auto& c : more) cases_.push_back(std::move(c));
      }
    }
  }

  const ConformanceOptions& options_;
  const CaseOptions& case_options_;
  std::vector<Case> cases_;
};

bool selected(const Case& c, const std::string& filter) {
  if (filter.empty() || c.name.find(filter) != std::string::npos) return true;
  // A group ("ce/cuda/*") stands for every case below it.
  if (!c.name.empty() && c.name.back() == '*') {
    const std::string group = c.name.substr(0, c.name.size() - 1);
    return filter.compare(0, group.size(), group) == 0;
  }
  return c.name.compare(0, 7, "plugin/") == 0 || c.name.find("/select") != std::string::npos;
}

CaseResult run_case(const Case& c) {
  CaseResult result;
  result.name = c.name;
  if (!c.skip_reason.empty()) {
    result.outcome = Outcome::Skip;
    result.detail = c.skip_reason;
    return result;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    result.detail = c.run();
    result.outcome = Outcome::Pass;
  } catch (const CaseSkip& s) {
    result.outcome = Outcome::Skip;
    result.detail = s.reason;
  } catch (const CaseFailure& f) {
    result.outcome = Outcome::Fail;
    result.detail = f.message;
  } catch (const Error& e) {
    result.outcome = Outcome::Fail;
    result.detail = std::string("unexpected error ") + status_name(e.status()) + ": " + e.what();
  } catch (const std::exception& e) {
    result.outcome = Outcome::Fail;
    result.detail = std::string("unexpected C++ exception: ") + e.what();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

Summary run_conformance(const ConformanceOptions& options, Reporter& reporter) {
  CaseOptions case_options;
  case_options.quick = options.quick;
  case_options.seeds = options.seeds;
  if (case_options.seeds.empty())
    case_options.seeds = options.quick ? std::vector<uint64_t>{1} : std::vector<uint64_t>{1, 2, 3};

  std::unique_ptr<Runtime> runtime;
  std::vector<Case> cases;
  try {
    RuntimeOptions runtime_options = options.runtime;
    runtime_options.cross_entropy = options.plugin;
    runtime_options.norm = options.plugin;
    // The suite checks the plugin it is given whatever its determinism; the checks it runs
    // follow what the plugin declares instead.
    runtime_options.deterministic = false;
    if (looks_like_path(options.plugin))
      runtime_options.plugin_path.insert(runtime_options.plugin_path.begin(),
                                         std::filesystem::absolute(options.plugin).string());
    runtime = std::make_unique<Runtime>(runtime_options);
  } catch (const std::exception& e) {
    cases.push_back(
        failing_case("plugin/runtime", std::string("cannot set up the runtime: ") + e.what()));
  }
  if (runtime) cases = CaseListBuilder(options, case_options).build(*runtime);

  std::vector<const Case*> chosen;
  for (const Case& c : cases)
    if (selected(c, options.filter)) chosen.push_back(&c);

  Summary summary;
  reporter.begin(options.plugin, static_cast<int64_t>(chosen.size()));
  for (const Case* c : chosen) {
    const CaseResult result = run_case(*c);
    switch (result.outcome) {
      case Outcome::Pass:
        ++summary.passed;
        break;
      case Outcome::Fail:
        ++summary.failed;
        break;
      case Outcome::Skip:
        ++summary.skipped;
        break;
    }
    reporter.report(result);
  }
  reporter.end(summary);
  return summary;
}

}  // namespace switchyard::conformance
