#include "timing_loop.hpp"

#include "rank_threads.hpp"

#include <algorithm>
#include <string>

namespace switchyard::bench {

TimedPhases time_phases(const RunContext& context, const PhaseCallbacks& callbacks) {
  const int ranks = context.setup.ranks();
  const int reps = context.settings.reps;
  const int warmup = context.settings.warmup;
  const int phases = callbacks.phases;

  std::vector<std::vector<std::vector<double>>> per_rank(static_cast<size_t>(ranks));
  TimedPhases result;
  result.phase_collectives.assign(static_cast<size_t>(phases), 0);
  RankBarrier barrier(ranks);

  run_on_ranks(ranks, barrier, [&](int rank) {
    Device& device = *context.setup.devices[static_cast<size_t>(rank)];
    device.activate();
    auto timer = device.make_timer(reps, phases + 1);
    for (int i = -warmup; i < reps; ++i) {
      if (rank == 0)
        context.progress.detail(i < 0 ? "warm-up " + std::to_string(i + warmup + 1) + "/" +
                                            std::to_string(warmup)
                                      : "rep " + std::to_string(i + 1) + "/" + std::to_string(reps));
      if (callbacks.prepare) callbacks.prepare(rank);
      device.flush_cache();
      if (ranks > 1) barrier.wait();
      device.hold_stream(context.settings.hold_us, context.settings.hold_kind);
      if (i >= 0) timer->mark(i, 0);
      for (int p = 0; p < phases; ++p) {
        const int64_t before = callbacks.collectives ? callbacks.collectives(rank) : 0;
        callbacks.run(rank, p);
        if (i >= 0) timer->mark(i, p + 1);
        if (rank == 0 && callbacks.collectives)
          result.phase_collectives[static_cast<size_t>(p)] = callbacks.collectives(rank) - before;
      }
      if (rank == 0) {
        const auto free_now = device.free_memory();
        if (free_now)
          result.min_free_bytes = std::min(result.min_free_bytes.value_or(*free_now), *free_now);
      }
    }
    per_rank[static_cast<size_t>(rank)] = timer->elapsed_ms();
    device.synchronize("the timed repetitions");
  });

  result.phase_ms.assign(static_cast<size_t>(phases), std::vector<double>(static_cast<size_t>(reps), 0.0));
  result.total_ms.assign(static_cast<size_t>(reps), 0.0);
  for (int rep = 0; rep < reps; ++rep)
    for (int rank = 0; rank < ranks; ++rank) {
      const auto& segments = per_rank[static_cast<size_t>(rank)][static_cast<size_t>(rep)];
      double total = 0;
      for (int p = 0; p < phases; ++p) {
        const double ms = segments.at(static_cast<size_t>(p));
        total += ms;
        auto& slot = result.phase_ms[static_cast<size_t>(p)][static_cast<size_t>(rep)];
        slot = std::max(slot, ms);
      }
      auto& slot = result.total_ms[static_cast<size_t>(rep)];
      slot = std::max(slot, total);
    }
  return result;
}

void run_once_on_ranks(const RunContext& context, const std::function<void(int rank)>& fn) {
  const int ranks = context.setup.ranks();
  RankBarrier barrier(ranks);
  run_on_ranks(ranks, barrier, [&](int rank) {
    context.setup.devices[static_cast<size_t>(rank)]->activate();
    if (ranks > 1) barrier.wait();
    fn(rank);
  });
}

}  // namespace switchyard::bench
