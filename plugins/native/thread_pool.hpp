// A small pool of std::threads for the CPU path, and parallel_for over index ranges.
//
// Determinism contract: the pool only decides WHICH thread runs a task, never what a task
// computes. Callers make every task's result a function of its inputs alone (a row, or a block
// of columns summed over all rows in row order), so results are bit-identical for any number
// of threads and any split into tasks.
#ifndef SWITCHYARD_NATIVE_THREAD_POOL_HPP
#define SWITCHYARD_NATIVE_THREAD_POOL_HPP

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
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

  // Threads to use from the next run on (the calling thread counts as one); >= 1. Lock-free,
  // so that the entry point may call it in a child forked while a parent thread held a lock.
  void set_threads(int threads);
  int threads() const;

  using Task = std::function<void(int64_t task, Scratch& scratch)>;

  // Calls task(t, scratch) exactly once for every t in [0, tasks), on up to threads() threads
  // (the caller included), and returns when all are done. Runs from different callers are
  // serialised. An exception from a task is rethrown here (the one of the lowest task index).
  void run(int64_t tasks, const Task& task);

 private:
  ThreadPool() = default;
  void resize_locked(int threads);  // with run_mutex_ held
  void stop_workers();
  // After fork() the child has none of the parent's workers: forget them without joining.
  void abandon_workers_of_parent();
  void worker_loop(std::size_t slot);
  void drain(std::size_t slot);

  std::mutex run_mutex_;  // one run at a time; held across a whole run
  mutable std::mutex state_mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  std::vector<Scratch> scratch_;  // [0]: the calling thread; [k + 1]: worker k
  std::atomic<int> requested_threads_{1};
  int owner_pid_ = 0;              // the process that started workers_
  uint64_t generation_ = 0;        // under state_mutex_
  bool stop_ = false;              // under state_mutex_
  std::size_t busy_workers_ = 0;   // under state_mutex_
  const Task* task_ = nullptr;
  int64_t tasks_ = 0;
  int64_t next_task_ = 0;          // under state_mutex_
  std::exception_ptr error_;       // under state_mutex_
  int64_t error_task_ = -1;        // under state_mutex_
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
