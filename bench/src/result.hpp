// What one backend did on one case, and what one case is. report.cpp turns these into the
// JSON file and the table; the runners fill them.
#ifndef SWITCHYARD_BENCH_RESULT_HPP
#define SWITCHYARD_BENCH_RESULT_HPP

#include "cases.hpp"
#include "device.hpp"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::bench {

// One output of the correctness run against the float64 reference.
struct OutputCheck {
  std::string tensor;     // "loss", "lse", "grad", "y", "dx", "mean", "rstd", "dweight", "dbias"
  double rel_error = 0;   // ||got - ref||_2 / ||ref||_2 over the checked elements; inf on NaN
  bool passed = false;    // every element within the conformance suite's tolerance
  std::string tolerance;  // that tolerance, in words
  std::string worst;      // the worst element out of tolerance; empty when passed
};

struct CheckReport {
  bool ran = false;
  int64_t rows = 0;  // rows checked (per rank); dweight/dbias are checked over all rows
  std::vector<OutputCheck> outputs;
  std::string error;  // why it could not run
  bool passed() const {
    if (!ran || !error.empty()) return false;
    for (const auto& o : outputs)
      if (!o.passed) return false;
    return !outputs.empty();
  }
  double max_rel_error() const {
    double worst = 0;
    for (const auto& o : outputs) worst = o.rel_error > worst ? o.rel_error : worst;  // inf on NaN
    return worst;
  }
};

enum class Status {
  Ok,           // timed and checked
  Unsupported,  // the backend refused this problem (supports() said why)
  Skipped,      // the case needs a feature the backend does not declare
  Error         // selection, a call or the device failed
};
const char* status_key(Status status);  // "ok", "unsupported", "skipped", "error"

struct Result {
  std::string case_name;
  std::string backend;  // as selected (name or path)
  std::string backend_version, backend_path;
  Status status = Status::Ok;
  std::string reason;               // for every status but Ok
  std::vector<std::string> notes;   // facts a reader needs next to the numbers

  // Per timed repetition (the slowest rank's time when several ranks ran).
  std::vector<double> total_ms, forward_ms, backward_ms;

  int64_t workspace_bytes = 0;         // per rank
  std::optional<int64_t> growth_bytes; // device memory the calls took beyond that (CUDA)
  int64_t caller_extra_bytes = 0;      // buffers beyond the in-place minimum (separate grad)

  // Collectives counted on the communicator during one forward / one backward (last timed
  // repetition, rank 0); nothing when no communicator was passed (tp_size 1).
  std::optional<int64_t> forward_collectives, backward_collectives;
  int32_t declared_forward_collectives = -1;      // the backend's own statement, this problem
  int32_t declared_forward_collectives_tp2 = -1;  // the same for the TP2 split of this case

  CheckReport check;
};

struct CaseReport {
  CaseSpec spec;
  DLDataType dtype{kDLBfloat, 16, 1};
  int32_t ranks = 1;           // ranks that ran (threads of this process)
  int32_t tp_size_run = 1;     // tp_size the backends were given
  std::string tp_mode;         // "tp1", "thread group", "nccl", "per-rank shape at tp_size 1"; norms "none"
  std::string tp_note;         // said in the output when the run differs from the case's TP
  Floor floor, floor_2pass;
  std::vector<Result> results;
};

}  // namespace switchyard::bench

#endif
