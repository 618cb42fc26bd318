// switchyard-bench: times every selected backend on PERFORMANCE.md's cases through the public
// host API and reports ms, GB/s, x floor, extra memory, collectives and a float64 check.
#include "backends.hpp"
#include "bench_error.hpp"
#include "cases.hpp"
#include "ce_bench.hpp"
#include "device.hpp"
#include "dtype.hpp"
#include "norm_bench.hpp"
#include "options.hpp"
#include "report.hpp"
#include "tp_group.hpp"

#include <switchyard/switchyard.hpp>
#include <switchyard/tools/progress.hpp>
#include <switchyard/tools/table.hpp>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

namespace switchyard::bench {
namespace {

std::vector<CaseSpec> select_cases(const BenchOptions& o) {
  const auto all = all_cases(o.small, o.norm_hidden);
  std::set<std::string> known;
  for (const auto& c : all) known.insert(c.name);
  for (const auto& name : o.cases)
    if (!known.count(name)) {
      std::string list;
      for (const auto& c : all) list += (list.empty() ? "" : ", ") + c.name;
      throw BenchError("--cases: unknown case '" + name + "'; known cases: " + list +
                       " (see --list-cases)");
    }
  std::vector<CaseSpec> out;
  for (const auto& c : all) {
    const bool family_on = c.family == CaseFamily::CrossEntropy ? o.family_ce : o.family_norm;
    const bool named = o.cases.empty() || std::find(o.cases.begin(), o.cases.end(), c.name) != o.cases.end();
    if (family_on && named) out.push_back(c);
  }
  if (out.empty())
    throw BenchError("no case matches --family and --cases together; see --list-cases");
  return out;
}

void list_cases(const std::vector<CaseSpec>& cases, DLDataType dtype, std::ostream& out) {
  tools::Table table({"case", "family", "path", "shape", "tp", "floor", "floor MiB", "summary"},
                     tools::Table::Numbers::right);
  for (const auto& c : cases) {
    const Floor f = primary_floor(c, dtype_bytes(dtype));
    table.add({c.name, family_key(c.family), path_key(c),
               "[" + std::to_string(c.rows) + ", " + std::to_string(c.cols) + "]",
               c.family == CaseFamily::CrossEntropy ? std::to_string(c.tp_size) : "-", f.name,
               std::to_string(f.bytes / (1 << 20)), c.summary});
  }
  table.print(out);
}

// The case list as peers.py --list-cases --json - prints it (tests/bench compares the two).
Json cases_json(const std::vector<CaseSpec>& cases) {
  Json out = Json::array();
  for (const auto& c : cases)
    out.push(Json::object()
                 .set("name", c.name)
                 .set("family", family_key(c.family))
                 .set("path", path_key(c))
                 .set("shape", Json::array_of(std::vector<int64_t>{c.rows, c.cols}))
                 .set("tp_size", c.tp_size));
  return out;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

int run(int argc, char** argv) {
  const BenchOptions o = parse_options(argc, argv);
  if (o.help) {
    std::cout << usage_text();
    return 0;
  }
  const std::vector<CaseSpec> cases = select_cases(o);
  if (o.list_cases) {
    if (o.json_path == "-")
      std::cout << json_text(cases_json(cases));
    else
      list_cases(cases, o.dtype, std::cout);
    return 0;
  }
  for (const auto& w : o.warnings) std::fprintf(stderr, "switchyard-bench: warning: %s\n", w.c_str());

  const bool json_to_stdout = o.json_path == "-";
  std::ostream& human = json_to_stdout ? std::cerr : std::cout;

  std::unique_ptr<Device> device = o.device == "cuda" ? make_cuda_device(o.gpu) : make_cpu_device();
  const bool cuda = o.device == "cuda";
  int64_t copy_bytes = o.copy_bytes;
  if (copy_bytes == 0)
    copy_bytes = cuda ? (o.small ? int64_t{64} << 20 : int64_t{4} << 30)
                      : (o.small ? int64_t{16} << 20 : int64_t{256} << 20);
  if (!o.quiet) std::fprintf(stderr, "measuring copy bandwidth (%lld MiB)...\n",
                             static_cast<long long>(copy_bytes >> 20));
  const CopyBandwidth copy = measure_copy_bandwidth(*device, copy_bytes, 20);

  RunSettings settings;
  settings.reps = o.reps;
  settings.warmup = o.warmup;
  settings.check_rows = o.check_rows;
  settings.grad_in_place = o.grad_in_place;
  settings.hold_us = cuda ? o.hold_us : 0;
  settings.hold_kind = o.hold_on_host ? HoldKind::Host : HoldKind::Gpu;
  settings.seed = o.seed;
  settings.runtime_base.plugin_path = o.plugin_path;

  const DLDeviceType device_type = cuda ? kDLCUDA : kDLCPU;
  const auto found = Runtime(settings.runtime_base).discover(true);
  const BackendPlan ce_plan = plan_backends(found, Family::CrossEntropy, device_type, o.backends);
  const BackendPlan norm_plan = plan_backends(found, Family::Norm, device_type, o.backends);

  int64_t steps = 0;
  for (const auto& c : cases)
    steps += static_cast<int64_t>(
        (c.family == CaseFamily::CrossEntropy ? ce_plan : norm_plan).names.size());
  tools::Progress progress(steps, o.quiet);

  RankSetup single;
  single.devices.push_back(device.get());
  std::map<int, std::unique_ptr<TpGroup>> groups;
  std::map<int, std::string> group_errors;

  std::vector<CaseReport> reports;
  std::optional<CeCaseData> ce_data;
  for (const auto& spec : cases) {
    const bool ce = spec.family == CaseFamily::CrossEntropy;
    const BackendPlan& plan = ce ? ce_plan : norm_plan;
    CaseReport report;
    report.spec = spec;
    report.dtype = o.dtype;
    report.floor = primary_floor(spec, dtype_bytes(o.dtype));
    report.floor_2pass = two_pass_floor(spec, dtype_bytes(o.dtype));
    report.tp_mode = ce ? "tp1" : "none";

    const RankSetup* setup = &single;
    if (ce && spec.tp_size > 1) {
      std::string why_not = "--tp-mode single";
      if (o.tp_mode == "auto") {
        if (!groups.count(spec.tp_size) && !group_errors.count(spec.tp_size)) {
          auto group = make_tp_group(*device, spec.tp_size, why_not);
          if (group) groups[spec.tp_size] = std::move(group);
          else group_errors[spec.tp_size] = why_not;
        }
        if (group_errors.count(spec.tp_size)) why_not = group_errors[spec.tp_size];
      }
      if (groups.count(spec.tp_size)) {
        setup = &groups[spec.tp_size]->setup();
        report.tp_mode = groups[spec.tp_size]->mode();
      } else {
        report.tp_mode = "per-rank shape at tp_size 1";
        report.tp_note = "TP" + std::to_string(spec.tp_size) + " per-rank shape run at tp_size 1 (" +
                         why_not + "): no collectives in the time";
      }
    }
    report.ranks = setup->ranks();
    report.tp_size_run = setup->ranks();

    if (plan.names.empty()) {
      progress.message("no backend runs " + std::string(ce ? "cross_entropy" : "norm") + " on " + o.device +
                       ": " + spec.name + " has no results");
    } else {
      RunContext context{settings, *setup, progress};
      if (ce) {
        if (!ce_data || !ce_data->same_shape(spec, setup->ranks(), o.dtype)) {
          ce_data.reset();  // free the previous shape's host copy first
          progress.message("preparing inputs and the float64 reference for " + spec.name + "...");
          ce_data = make_ce_data(spec, o.dtype, setup->ranks(), settings);
        }
        for (const auto& name : plan.names) {
          progress.begin_step(spec.name + " / " + name);
          report.results.push_back(run_ce_backend(spec, *ce_data, name, context));
        }
      } else {
        progress.message("preparing inputs and the float64 reference for " + spec.name + "...");
        const NormCaseData data = make_norm_data(spec, o.dtype, settings);
        for (const auto& name : plan.names) {
          progress.begin_step(spec.name + " / " + name);
          report.results.push_back(run_norm_backend(spec, data, name, context));
        }
      }
    }
    reports.push_back(std::move(report));
  }
  progress.finish();

  RunInfo info;
  info.command_line = o.command_line;
  info.created = utc_now();
  info.device = device->describe();
  info.copy = copy;
  info.reps = o.reps;
  info.warmup = o.warmup;
  info.small = o.small;
  info.dtype = dtype_label(o.dtype);
  info.grad_in_place = o.grad_in_place;
  info.check_rows = o.check_rows;
  info.seed = o.seed;
  info.cache_flush_bytes = device->cache_flush_bytes();
  info.hold_us = settings.hold_us;
  info.hold_kind = settings.hold_kind == HoldKind::Host ? "host function" : "GPU spin kernel";
  info.timer = cuda ? "CUDA events" : "std::chrono::steady_clock";
  info.not_run = ce_plan.not_run;
  info.not_run.insert(info.not_run.end(), norm_plan.not_run.begin(), norm_plan.not_run.end());
  if (!o.family_ce || !o.family_norm) {
    const std::string off = o.family_ce ? "norm" : "ce";
    info.not_run.erase(std::remove_if(info.not_run.begin(), info.not_run.end(),
                                      [&](const NotRun& n) { return n.family == off; }),
                       info.not_run.end());
  }

  print_report(human, info, reports);
  if (!o.json_path.empty()) {
    const std::string text = json_text(report_json(info, reports));
    if (json_to_stdout) {
      std::cout << text;
    } else {
      std::ofstream file(o.json_path);
      file << text;
      if (!file)
        throw BenchError("cannot write --json file '" + o.json_path + "'; check the folder exists "
                         "and is writable");
      human << "\nJSON written to " << o.json_path << "\n";
    }
  }
  return exit_status(reports);
}

}  // namespace
}  // namespace switchyard::bench

int main(int argc, char** argv) {
  try {
    return switchyard::bench::run(argc, argv);
  } catch (const switchyard::bench::BenchError& e) {
    std::fprintf(stderr, "switchyard-bench: error: %s\n", e.what());
  } catch (const switchyard::Error& e) {
    std::fprintf(stderr, "switchyard-bench: error: %s: %s\n", switchyard::status_name(e.status()),
                 e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "switchyard-bench: internal error: %s\n", e.what());
  }
  return 1;
}
