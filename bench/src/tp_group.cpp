#include "tp_group.hpp"

#include <switchyard/comm.hpp>
#ifdef SWITCHYARD_BENCH_HAVE_NCCL
#include <switchyard/nccl.hpp>
#endif

#include <cstdlib>
#include <exception>
#include <vector>

namespace switchyard::bench {
namespace {

// A collective that does not complete in this time fails instead of hanging the benchmark.
constexpr int kThreadGroupTimeoutMs = 30000;

class ThreadTpGroup : public TpGroup {
 public:
  ThreadTpGroup(Device& rank0, int ranks) : group_(ranks, kThreadGroupTimeoutMs) {
    setup_.devices.push_back(&rank0);
    for (int r = 1; r < ranks; ++r) {
      extra_.push_back(make_cpu_device());
      setup_.devices.push_back(extra_.back().get());
    }
    for (int r = 0; r < ranks; ++r) setup_.comms.push_back(group_.comm(r));
  }
  const RankSetup& setup() const override { return setup_; }
  std::string mode() const override { return "thread group"; }

 private:
  ThreadGroup group_;
  std::vector<std::unique_ptr<Device>> extra_;
  RankSetup setup_;
};

#ifdef SWITCHYARD_BENCH_HAVE_NCCL
class NcclTpGroup : public TpGroup {
 public:
  NcclTpGroup(Device& rank0, int ranks) {
    const int first = rank0.dl_device().device_id;
    std::vector<int32_t> gpus;
    setup_.devices.push_back(&rank0);
    gpus.push_back(first);
    for (int r = 1; r < ranks; ++r) {
      extra_.push_back(make_cuda_device(first + r));
      setup_.devices.push_back(extra_.back().get());
      gpus.push_back(first + r);
    }
    comms_ = NcclComm::create_all(gpus);
    for (const auto& comm : comms_) setup_.comms.push_back(comm.get());
  }
  const RankSetup& setup() const override { return setup_; }
  std::string mode() const override { return "nccl"; }

 private:
  std::vector<std::unique_ptr<Device>> extra_;
  std::vector<NcclComm> comms_;
  RankSetup setup_;
};
#endif

}  // namespace

std::unique_ptr<TpGroup> make_tp_group(Device& rank0, int ranks, std::string& why_not) {
  if (rank0.dl_device().device_type == kDLCPU) return std::make_unique<ThreadTpGroup>(rank0, ranks);
#ifdef SWITCHYARD_BENCH_HAVE_NCCL
  const int first = rank0.dl_device().device_id;
  const int visible = cuda_device_count();
  if (visible < first + ranks) {
    why_not = "real TP" + std::to_string(ranks) + " needs GPUs " + std::to_string(first) + ".." +
              std::to_string(first + ranks - 1) + "; this process sees " + std::to_string(visible);
    return nullptr;
  }
  // NVLink multicast can put a shared host's GPUs out of service: keep it off unless the
  // caller decided otherwise.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  try {
    return std::make_unique<NcclTpGroup>(rank0, ranks);
  } catch (const std::exception& e) {
    why_not = std::string("creating the NCCL communicators failed: ") + e.what();
    return nullptr;
  }
#else
  why_not = "real TP" + std::to_string(ranks) +
            " on CUDA needs libswitchyard-nccl, which this build does not have";
  return nullptr;
#endif
}

}  // namespace switchyard::bench
