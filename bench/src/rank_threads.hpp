// Tensor-parallel ranks as threads of this process (the core's thread group on the CPU, one
// GPU per thread over NCCL): a barrier that a failing rank can break, and a runner that
// starts one thread per rank and rethrows the first failure once all have stopped.
#ifndef SWITCHYARD_BENCH_RANK_THREADS_HPP
#define SWITCHYARD_BENCH_RANK_THREADS_HPP

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace switchyard::bench {

class RankBarrier {
 public:
  explicit RankBarrier(int ranks) : ranks_(ranks) {}
  // Returns when every rank has arrived; throws BenchError once any rank has called abort().
  void wait();
  void abort();

 private:
  int ranks_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::mutex mutex_;
  std::condition_variable cv_;
};

// Runs fn(rank) for rank in [0, ranks): inline when ranks == 1, else one thread per rank. When a
// rank throws, the barrier is aborted so the others stop at their next wait; the first
// exception is rethrown after every thread has joined.
void run_on_ranks(int ranks, RankBarrier& barrier, const std::function<void(int)>& fn);

}  // namespace switchyard::bench

#endif
