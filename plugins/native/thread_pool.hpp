// A small pool of std::threads for the CPU path, and parallel_for over index ranges.
//
// Determinism contract: the pool only decides WHICH thread runs a task, never what a task
// computes. Callers make every task's result a function of its inputs alone (a row, or a block
// of columns summed over all rows in row order), so results are bit-identical for any number
// of threads and any split into tasks.
//
// fork(): the core loads plugins in forked children, and a user's process may fork too. A child
// has none of the parent's threads, and the parent's mutexes and condition variables may be
// mid-use in its copy. So the pool keeps all of that in one Crew object owned by the process
// that made it; a child makes its own Crew on first use and never touches (nor destroys) the
// parent's.
#ifndef SWITCHYARD_NATIVE_THREAD_POOL_HPP
#define SWITCHYARD_NATIVE_THREAD_POOL_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace switchyard::native {

// Per-thread scratch memory that lives as long as the pool and grows to the largest request,
// so that steady-state calls allocate nothing.
class Scratch {
 public:
  // At least n doubles, uninitialised; valid until the next call on this Scratch.
  double* doubles(std::size_t n);

 private:
  std::vector<double> buffer_;
};

class ThreadPool {
 public:
  // The process-wide pool of this plugin; threads start on first use, stop at unload.
  static ThreadPool& instance();

  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads to use from the next run on (the calling thread counts as one); >= 1. Lock-free:
  // the entry point calls it, possibly in a freshly forked child.
  void set_threads(int threads);
  int threads() const;

  using Task = std::function<void(int64_t task, Scratch& scratch)>;

  // Calls task(t, scratch) exactly once for every t in [0, tasks), on up to threads() threads
  // (the caller included), and returns when all are done. Runs from different callers are
  // serialised. An exception from a task is rethrown here (the one of the lowest task index).
  void run(int64_t tasks, const Task& task);

  class Crew;  // threads, locks and scratch of one process (thread_pool.cpp)

 private:
  ThreadPool() = default;
  Crew& crew();  // this process's, made on first use

  std::atomic<int> requested_threads_{1};
  std::atomic<Crew*> crew_{nullptr};  // owned; see ~ThreadPool
};

// Splits [0, items) into contiguous ranges and calls body(begin, end, scratch) for each, in
// parallel. work_per_item (e.g. columns per row) sizes the ranges so that small problems run
// on the calling thread alone.
void parallel_for(int64_t items, int64_t work_per_item,
                  const std::function<void(int64_t begin, int64_t end, Scratch& scratch)>& body);

// The default thread count: the hardware concurrency, capped.
int default_threads();

}  // namespace switchyard::native

#endif
