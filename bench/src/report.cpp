#include "report.hpp"

#include "dtype.hpp"
#include "stats.hpp"

#include <switchyard/switchyard.hpp>
#include <switchyard/tools/table.hpp>

#include <cmath>
#include <cstdio>
#include <ostream>

namespace switchyard::bench {
namespace {

double ms_for_bytes(int64_t bytes, const CopyBandwidth& copy) {
  return copy.gb_per_s > 0 ? static_cast<double>(bytes) / (copy.gb_per_s * 1e6) : NAN;
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  return buffer;
}

std::string significant(double v) {
  if (!std::isfinite(v)) return "-";
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.4g", v);
  return buffer;
}

std::string sci(double v) {
  if (std::isinf(v)) return "inf";
  if (!std::isfinite(v)) return "-";
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.1e", v);
  return buffer;
}

std::string mib(int64_t bytes) { return fixed(static_cast<double>(bytes) / (1 << 20), 1); }

std::string shape_text(const CaseSpec& s) {
  return "[" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + "]";
}

Json optional_int(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(); }

Json floor_json(const Floor& f, const CopyBandwidth& copy) {
  return Json::object()
      .set("name", f.name)
      .set("bytes", f.bytes)
      .set("ms", ms_for_bytes(f.bytes, copy));
}

Json check_json(const CheckReport& c) {
  Json outputs = Json::array();
  for (const auto& o : c.outputs)
    outputs.push(Json::object()
                     .set("tensor", o.tensor)
                     .set("rel_error", o.rel_error)
                     .set("passed", o.passed)
                     .set("tolerance", o.tolerance)
                     .set("worst", o.worst));
  Json j = Json::object();
  j.set("ran", c.ran).set("passed", c.passed()).set("rows", c.rows);
  j.set("max_rel_error", c.ran && c.error.empty() ? Json(c.max_rel_error()) : Json());
  j.set("outputs", outputs);
  j.set("error", c.error);
  return j;
}

std::string check_cell(const CheckReport& c) {
  if (!c.ran) return "-";
  if (!c.error.empty()) return "FAIL (error)";
  return std::string(c.passed() ? "PASS " : "FAIL ") + sci(c.max_rel_error());
}

std::string collectives_cell(const CaseReport& c, const Result& r) {
  auto n = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
  auto d = [](int32_t v) { return v >= 0 ? std::to_string(v) : std::string("?"); };
  if (c.spec.family != CaseFamily::CrossEntropy) return "-";
  std::string counted = n(r.forward_collectives);
  if (c.spec.path == CePath::PerToken) counted += "/" + n(r.backward_collectives);
  return counted + " (tp2: " + d(r.declared_forward_collectives_tp2) + ")";
}

}  // namespace

const char* status_key(Status status) {
  switch (status) {
    case Status::Ok: return "ok";
    case Status::Unsupported: return "unsupported";
    case Status::Skipped: return "skipped";
    case Status::Error: return "error";
  }
  return "error";
}

Derived derive(const CaseReport& c, const Result& r, const CopyBandwidth& copy) {
  Derived d;
  d.median_ms = median(r.total_ms);
  d.min_ms = min_of(r.total_ms);
  d.max_ms = max_of(r.total_ms);
  d.forward_ms = median(r.forward_ms);
  d.backward_ms = median(r.backward_ms);
  d.floor_ms = ms_for_bytes(c.floor.bytes, copy);
  d.floor_2pass_ms = ms_for_bytes(c.floor_2pass.bytes, copy);
  d.gb_per_s = d.median_ms > 0 ? static_cast<double>(c.floor.bytes) / (d.median_ms * 1e6) : NAN;
  d.x_floor = d.median_ms / d.floor_ms;
  d.x_floor_2pass = d.median_ms / d.floor_2pass_ms;
  d.extra_bytes = r.workspace_bytes + r.growth_bytes.value_or(0) + r.caller_extra_bytes;
  return d;
}

Json report_json(const RunInfo& info, const std::vector<CaseReport>& cases) {
  Json root = Json::object();
  root.set("schema", "switchyard-bench/1");
  root.set("tool", "switchyard-bench");
  root.set("tool_version", version());
  root.set("created", info.created);
  root.set("command", info.command_line);
  root.set("device", Json::object()
                         .set("type", info.device.type)
                         .set("index", info.device.index)
                         .set("name", info.device.name)
                         .set("multiprocessors", info.device.multiprocessors)
                         .set("l2_bytes", info.device.l2_bytes)
                         .set("memory_bytes", info.device.memory_bytes)
                         .set("compute_capability", info.device.compute_capability)
                         .set("driver", info.device.driver));
  root.set("settings", Json::object()
                           .set("reps", info.reps)
                           .set("warmup", info.warmup)
                           .set("small", info.small)
                           .set("dtype", info.dtype)
                           .set("grad_buffer", info.grad_in_place ? "inplace" : "separate")
                           .set("check_rows", info.check_rows)
                           .set("seed", static_cast<int64_t>(info.seed))
                           .set("cache_flush_bytes", info.cache_flush_bytes)
                           .set("hold_us", info.hold_us)
                           .set("hold_kind", info.hold_kind)
                           .set("timer", info.timer));
  root.set("copy_bandwidth", Json::object()
                                 .set("bytes", info.copy.bytes)
                                 .set("reps", info.copy.reps)
                                 .set("median_ms", info.copy.median_ms)
                                 .set("gb_per_s", info.copy.gb_per_s)
                                 .set("counts", "bytes read + bytes written")
                                 .set("reference_gb_per_s", kReferenceCopyGBps)
                                 .set("reference", "PERFORMANCE.md, H200, 4 GiB device-to-device copy; "
                                                   "printed only, floors use the measured value"));
  Json not_run = Json::array();
  for (const auto& n : info.not_run)
    not_run.push(Json::object().set("family", n.family).set("name", n.name).set("reason", n.reason));
  root.set("not_run", not_run);

  Json case_list = Json::array();
  Json results = Json::array();
  for (const auto& c : cases) {
    const bool ce = c.spec.family == CaseFamily::CrossEntropy;
    Json cj = Json::object();
    cj.set("name", c.spec.name)
        .set("family", family_key(c.spec.family))
        .set("path", path_key(c.spec))
        .set("summary", c.spec.summary)
        .set("shape", Json::array_of(std::vector<int64_t>{c.spec.rows, c.spec.cols}))
        .set("dtype", dtype_label(c.dtype))
        .set("tp_size", c.spec.tp_size)
        .set("ranks", c.ranks)
        .set("tp_size_run", c.tp_size_run)
        .set("tp_mode", c.tp_mode)
        .set("tp_note", c.tp_note)
        .set("floor", floor_json(c.floor, info.copy));
    if (ce) cj.set("floor_2pass", floor_json(c.floor_2pass, info.copy));
    case_list.push(cj);

    for (const auto& r : c.results) {
      const bool ok = r.status == Status::Ok;
      const Derived d = derive(c, r, info.copy);
      Json rj = Json::object();
      rj.set("case", c.spec.name)
          .set("family", family_key(c.spec.family))
          .set("path", path_key(c.spec))
          .set("kind", "backend")
          .set("name", r.backend)
          .set("version", r.backend_version)
          .set("library", r.backend_path)
          .set("status", status_key(r.status))
          .set("reason", r.reason)
          .set("notes", Json::array_of(r.notes))
          .set("reps", static_cast<int64_t>(r.total_ms.size()))
          .set("warmup", info.warmup);
      if (ok) {
        rj.set("time_ms", Json::object()
                              .set("median", d.median_ms)
                              .set("min", d.min_ms)
                              .set("max", d.max_ms)
                              .set("forward_median", d.forward_ms)
                              .set("backward_median", r.backward_ms.empty() ? Json() : Json(d.backward_ms))
                              .set("samples", Json::array_of(r.total_ms)));
        rj.set("gb_per_s", d.gb_per_s).set("floor_ms", d.floor_ms).set("x_floor", d.x_floor);
        if (ce) rj.set("floor_2pass_ms", d.floor_2pass_ms).set("x_floor_2pass", d.x_floor_2pass);
        rj.set("memory", Json::object()
                             .set("workspace_bytes", r.workspace_bytes)
                             .set("growth_bytes", optional_int(r.growth_bytes))
                             .set("caller_extra_bytes", r.caller_extra_bytes)
                             .set("extra_bytes", d.extra_bytes));
      } else {
        rj.set("time_ms", Json()).set("gb_per_s", Json()).set("floor_ms", d.floor_ms).set("x_floor", Json());
        rj.set("memory", Json());
      }
      if (ce)
        rj.set("collectives", Json::object()
                                  .set("forward", optional_int(r.forward_collectives))
                                  .set("backward", optional_int(r.backward_collectives))
                                  .set("declared_forward", r.declared_forward_collectives)
                                  .set("declared_forward_tp2", r.declared_forward_collectives_tp2));
      rj.set("check", check_json(r.check));
      results.push(rj);
    }
  }
  root.set("cases", case_list);
  root.set("results", results);
  return root;
}

std::string json_text(const Json& document) {
  Json::Format format;
  format.significant_digits = 9;
  format.scalar_arrays_inline = true;
  return document.dump(format) + "\n";
}

void print_report(std::ostream& out, const RunInfo& info, const std::vector<CaseReport>& cases) {
  const auto& dev = info.device;
  out << "switchyard-bench " << version() << " on " << dev.type << ":" << dev.index << " " << dev.name;
  if (dev.type == "cuda")
    out << " (" << dev.multiprocessors << " SMs, " << mib(dev.l2_bytes) << " MiB L2, cc "
        << dev.compute_capability << ", " << dev.driver << ")";
  out << "\n";
  out << "copy bandwidth: " << fixed(info.copy.gb_per_s, 1) << " GB/s measured (" << mib(info.copy.bytes)
      << " MiB " << (dev.type == "cuda" ? "device-to-device" : "memcpy") << ", read + write, median of "
      << info.copy.reps << "); PERFORMANCE.md's H200: " << fixed(kReferenceCopyGBps, 0)
      << " GB/s (reference only)\n";
  out << "timing: " << info.timer << ", median of " << info.reps << " reps after " << info.warmup
      << " warm-up";
  if (info.cache_flush_bytes > 0) out << ", cache flushed (" << mib(info.cache_flush_bytes) << " MiB write) before each rep";
  if (info.hold_us > 0)
    out << ", stream held " << info.hold_us << " us by a " << info.hold_kind
        << " before each rep (GPU-only times)";
  out << "; " << info.dtype << "; CE gradient " << (info.grad_in_place ? "in place" : "in a separate buffer")
      << "\n";
  for (const auto& n : info.not_run) out << "not run (" << n.family << "): " << n.name << ": " << n.reason << "\n";
  out << "\n";

  tools::Table case_table({"case", "shape", "tp", "floor", "floor ms", "2-pass ms"},
                          tools::Table::Numbers::right);
  for (const auto& c : cases) {
    const bool ce = c.spec.family == CaseFamily::CrossEntropy;
    std::string tp = ce ? c.tp_mode : "-";
    case_table.add({c.spec.name, shape_text(c.spec), tp, c.floor.name,
                    significant(ms_for_bytes(c.floor.bytes, info.copy)),
                    ce ? significant(ms_for_bytes(c.floor_2pass.bytes, info.copy)) : "-"});
  }
  case_table.print(out);
  out << "\n";

  tools::Table table({"case", "backend", "median ms", "min", "max", "fwd", "bwd", "GB/s",
                      "x floor", "extra MiB", "coll f/b (decl)", "check"},
                     tools::Table::Numbers::right);
  std::vector<std::string> footnotes;
  for (const auto& c : cases) {
    for (const auto& r : c.results) {
      if (r.status != Status::Ok) {
        table.add({c.spec.name, r.backend, status_key(r.status), "", "", "", "", "", "", "", "", "-"});
        footnotes.push_back(c.spec.name + " / " + r.backend + ": " + status_key(r.status) + ": " + r.reason);
        continue;
      }
      const Derived d = derive(c, r, info.copy);
      table.add({c.spec.name, r.backend, fixed(d.median_ms, 4), fixed(d.min_ms, 4), fixed(d.max_ms, 4),
                 fixed(d.forward_ms, 4), r.backward_ms.empty() ? "-" : fixed(d.backward_ms, 4),
                 fixed(d.gb_per_s, 1), fixed(d.x_floor, 2), mib(d.extra_bytes), collectives_cell(c, r),
                 check_cell(r.check)});
      if (!r.check.error.empty()) footnotes.push_back(c.spec.name + " / " + r.backend + ": " + r.check.error);
      for (const auto& o : r.check.outputs)
        if (!o.passed) footnotes.push_back(c.spec.name + " / " + r.backend + ": " + o.tensor + " FAIL: " + o.worst +
                                           " (tolerance " + o.tolerance + ")");
    }
  }
  table.print(out);
  for (const auto& c : cases)
    if (!c.tp_note.empty()) footnotes.push_back(c.spec.name + ": " + c.tp_note);
  if (!footnotes.empty()) out << "\n";
  for (const auto& f : footnotes) out << "* " << f << "\n";
  out << "\nx floor: median / (bytes that must move / measured copy bandwidth); CE per-token "
         "cases use the 3-pass floor, grad-in-forward the 2-pass floor, norms 5 x tensor bytes. "
         "check: max relative error (||got - ref|| / ||ref||) of the outputs against float64; "
         "a result passes when every element is within the conformance suite's tolerance.\n";
}

int exit_status(const std::vector<CaseReport>& cases) {
  for (const auto& c : cases)
    for (const auto& r : c.results) {
      if (r.status == Status::Error) return 3;
      if (r.status == Status::Ok && !r.check.passed()) return 3;
    }
  return 0;
}

}  // namespace switchyard::bench
