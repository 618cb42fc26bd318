// Settings shared by the runners, and the ranks a case runs on.
#ifndef SWITCHYARD_BENCH_RUN_SETTINGS_HPP
#define SWITCHYARD_BENCH_RUN_SETTINGS_HPP

#include "device.hpp"

#include <switchyard/abi.h>
#include <switchyard/switchyard.hpp>
#include <switchyard/tools/progress.hpp>

#include <cstdint>
#include <vector>

namespace switchyard::bench {

struct RunSettings {
  int reps = 20;
  int warmup = 5;
  int check_rows = 32;
  bool grad_in_place = true;  // CE: the gradient overwrites the logits (no second buffer)
  int hold_us = 1000;         // stream held before each timed repetition (CUDA)
  HoldKind hold_kind = HoldKind::Gpu;
  uint64_t seed = 1234;
  RuntimeOptions runtime_base;  // search path etc.; the runner sets the backend
};

// One device and, with several ranks, one communicator per rank. Borrowed.
struct RankSetup {
  std::vector<Device*> devices;       // [ranks]
  std::vector<const sy_comm*> comms;  // [ranks], or empty for a single rank
  int ranks() const { return static_cast<int>(devices.size()); }
};

// What a runner needs to say while it works.
struct RunContext {
  const RunSettings& settings;
  const RankSetup& setup;
  tools::Progress& progress;
};

}  // namespace switchyard::bench

#endif
