// The timing protocol shared by both families (PERFORMANCE.md, "Protocol"): per repetition,
// re-copy the inputs a call overwrites, flush the cache and hold the stream briefly (so the
// host queues the whole repetition first: GPU-only times) OUTSIDE the window, then time each
// phase (forward, backward) between device marks. Warm-up repetitions run the same way and
// are not recorded. With several ranks every rank runs the loop on its own thread, aligned by
// a barrier before each repetition; a repetition's time is the slowest rank's.
#ifndef SWITCHYARD_BENCH_TIMING_LOOP_HPP
#define SWITCHYARD_BENCH_TIMING_LOOP_HPP

#include "run_settings.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace switchyard::bench {

struct PhaseCallbacks {
  int phases = 1;
  std::function<void(int rank)> prepare;               // untimed; may be empty
  std::function<void(int rank, int phase)> run;        // timed
  std::function<int64_t(int rank)> collectives;        // issued so far; may be empty
};

struct TimedPhases {
  std::vector<double> total_ms;               // [rep]
  std::vector<std::vector<double>> phase_ms;  // [phase][rep]
  std::vector<int64_t> phase_collectives;     // [phase], rank 0, last repetition
  std::optional<int64_t> min_free_bytes;      // lowest free device memory seen, rank 0
};

TimedPhases time_phases(const RunContext& context, const PhaseCallbacks& callbacks);

// Runs fn(rank) once on every rank (threads when several), aligned by a barrier before
// the call; for the correctness run.
void run_once_on_ranks(const RunContext& context, const std::function<void(int rank)>& fn);

}  // namespace switchyard::bench

#endif
