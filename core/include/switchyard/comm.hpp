// Collectives the core hands to plugins (sy_comm): one rank, and an in-process group of N
// threads for CPU tensors. NCCL lives in libswitchyard-nccl (switchyard/nccl.hpp).
#ifndef SWITCHYARD_COMM_HPP
#define SWITCHYARD_COMM_HPP

#include <switchyard/abi.h>

#include <cstdint>
#include <memory>

namespace switchyard {

// A communicator of size 1: collectives copy send to recv (nothing when in place).
// Works for CPU buffers; for CUDA buffers use the NCCL communicator.
class SingleRankComm {
 public:
  explicit SingleRankComm(DLDevice device = DLDevice{kDLCPU, 0});
  // The table's ctx points at this object: neither copyable nor movable.
  SingleRankComm(const SingleRankComm&) = delete;
  SingleRankComm& operator=(const SingleRankComm&) = delete;
  const sy_comm* get() const { return &comm_; }
  int64_t collectives() const { return count_; }

 private:
  static sy_status all_reduce(void*, const void*, void*, int64_t, DLDataType, sy_reduce_op,
                              void*, sy_error*);
  static sy_status all_gather(void*, const void*, void*, int64_t, DLDataType, void*,
                              sy_error*);
  sy_comm comm_{};
  int64_t count_ = 0;
};

// N ranks that are N threads of this process, on CPU buffers. Rank r's thread uses comm(r).
// Reductions are computed in rank order, so results are bit-identical on every rank and
// from run to run. float32, float64, bfloat16, float16, int32 and int64 are supported.
// A rank that does not arrive within the timeout fails the collective with
// SY_ERR_COMMUNICATION instead of hanging forever. The group must outlive every collective
// in flight: destroy it only after all rank threads have returned from their calls.
class ThreadGroup {
 public:
  explicit ThreadGroup(int32_t size, int timeout_ms = 60000);
  ~ThreadGroup();
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  int32_t size() const;
  const sy_comm* comm(int32_t rank) const;  // host-owned, valid while the group lives

  // Collectives rank `rank` has issued so far, and by kind (for tests that count them).
  int64_t collectives(int32_t rank) const;
  int64_t all_reduces(int32_t rank) const;
  int64_t all_gathers(int32_t rank) const;
  void reset_counts();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard

#endif  // SWITCHYARD_COMM_HPP
