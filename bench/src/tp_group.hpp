// The ranks of a TP case: devices and communicators that live for the whole run. On the CPU
// the core's thread group gives real TP semantics in one process; on CUDA, with 2+ GPUs and
// libswitchyard-nccl, one GPU per rank over NCCL (ncclCommInitAll, one thread per rank).
#ifndef SWITCHYARD_BENCH_TP_GROUP_HPP
#define SWITCHYARD_BENCH_TP_GROUP_HPP

#include "device.hpp"
#include "run_settings.hpp"

#include <memory>
#include <string>

namespace switchyard::bench {

class TpGroup {
 public:
  virtual ~TpGroup() = default;
  virtual const RankSetup& setup() const = 0;
  virtual std::string mode() const = 0;  // "thread group" | "nccl"
};

// Returns nothing, with the reason in `why_not`, when `ranks` real ranks cannot run here.
// `rank0` is the benchmark's device and becomes rank 0.
std::unique_ptr<TpGroup> make_tp_group(Device& rank0, int ranks, std::string& why_not);

}  // namespace switchyard::bench

#endif
