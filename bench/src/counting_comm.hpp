// An sy_comm that forwards to another one and counts what passes through, so that the
// benchmark reports the collectives a backend really issued (not what it declares).
#ifndef SWITCHYARD_BENCH_COUNTING_COMM_HPP
#define SWITCHYARD_BENCH_COUNTING_COMM_HPP

#include <switchyard/abi.h>

#include <atomic>
#include <cstdint>

namespace switchyard::bench {

class CountingComm {
 public:
  // `inner` is borrowed and must outlive this object.
  explicit CountingComm(const sy_comm* inner);
  CountingComm(const CountingComm&) = delete;
  CountingComm& operator=(const CountingComm&) = delete;

  const sy_comm* get() const { return &comm_; }
  int64_t all_reduces() const { return all_reduces_.load(); }
  int64_t all_gathers() const { return all_gathers_.load(); }
  int64_t total() const { return all_reduces() + all_gathers(); }

 private:
  static sy_status all_reduce(void* ctx, const void* send, void* recv, int64_t count,
                              DLDataType dtype, sy_reduce_op op, void* stream, sy_error* err);
  static sy_status all_gather(void* ctx, const void* send, void* recv, int64_t count_per_rank,
                              DLDataType dtype, void* stream, sy_error* err);

  const sy_comm* inner_;
  sy_comm comm_{};
  std::atomic<int64_t> all_reduces_{0};
  std::atomic<int64_t> all_gathers_{0};
};

}  // namespace switchyard::bench

#endif
