#include "rank_threads.hpp"

#include "bench_error.hpp"

#include <exception>
#include <thread>
#include <vector>

namespace switchyard::bench {

void RankBarrier::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) throw BenchError("another rank failed");
  const uint64_t generation = generation_;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
  if (generation_ == generation) throw BenchError("another rank failed");
}

void RankBarrier::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  cv_.notify_all();
}

void run_on_ranks(int ranks, RankBarrier& barrier, const std::function<void(int)>& fn) {
  if (ranks == 1) {
    fn(0);
    return;
  }
  std::vector<std::exception_ptr> failures(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank)
    threads.emplace_back([&, rank] {
      try {
        fn(rank);
      } catch (...) {
        failures[static_cast<size_t>(rank)] = std::current_exception();
        barrier.abort();
      }
    });
  for (auto& thread : threads) thread.join();
  // Prefer a real failure over the "another rank failed" that it caused on the others.
  std::exception_ptr first;
  for (const auto& failure : failures) {
    if (!failure) continue;
    try {
      std::rethrow_exception(failure);
    } catch (const BenchError& e) {
      if (std::string(e.what()) == "another rank failed") {
        if (!first) first = failure;
        continue;
      }
      std::rethrow_exception(failure);
    } catch (...) {
      std::rethrow_exception(failure);
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace switchyard::bench
