// The benchmark's two outputs: the JSON file (schema in bench/README.md) and the table.
#ifndef SWITCHYARD_BENCH_REPORT_HPP
#define SWITCHYARD_BENCH_REPORT_HPP

#include "backends.hpp"
#include "device.hpp"
#include "result.hpp"

#include <switchyard/tools/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace switchyard::bench {

using tools::Json;

// PERFORMANCE.md's copy bandwidth of the H200, printed for reference only: floors divide by
// the bandwidth measured in the same run.
constexpr double kReferenceCopyGBps = 4280.0;

struct RunInfo {
  std::string command_line;
  std::string created;  // UTC, ISO 8601
  DeviceDescription device;
  CopyBandwidth copy;
  int reps = 0;
  int warmup = 0;
  bool small = false;
  std::string dtype;
  bool grad_in_place = true;
  int check_rows = 0;
  uint64_t seed = 0;
  int64_t cache_flush_bytes = 0;
  int hold_us = 0;
  std::string hold_kind;  // "GPU spin kernel" | "host function"
  std::string timer;  // "CUDA events" | "std::chrono::steady_clock"
  std::vector<NotRun> not_run;
};

// Derived figures of one result, against its case's floor and the measured copy bandwidth.
struct Derived {
  double median_ms = 0, min_ms = 0, max_ms = 0, forward_ms = 0, backward_ms = 0;
  double floor_ms = 0, floor_2pass_ms = 0;
  double gb_per_s = 0, x_floor = 0, x_floor_2pass = 0;
  int64_t extra_bytes = 0;
};
Derived derive(const CaseReport& c, const Result& r, const CopyBandwidth& copy);

Json report_json(const RunInfo& info, const std::vector<CaseReport>& cases);
// A document as the bench writes it: numbers to float precision (9 digits; times are not
// known better), arrays of scalars on one line (repetition times are read, not scrolled),
// and a final line break.
std::string json_text(const Json& document);
void print_report(std::ostream& out, const RunInfo& info, const std::vector<CaseReport>& cases);

// Exit status: 0, or 3 when a check failed or a backend errored (never for a time).
int exit_status(const std::vector<CaseReport>& cases);

}  // namespace switchyard::bench

#endif
