#include "thread_pool.hpp"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace switchyard::native {
namespace {
// Below this many elements of work per task, handing work to another thread costs more than
// it saves.
constexpr int64_t kMinWorkPerTask = int64_t{1} << 15;
// More tasks than threads, so that uneven rows still balance.
constexpr int64_t kTasksPerThread = 4;
constexpr int kMaxDefaultThreads = 64;
}  // namespace

double* Scratch::doubles(std::size_t n) {
  if (buffer_.size() < n) buffer_.resize(n);
  return buffer_.data();
}

// The workers of one process and everything they synchronise on.
class ThreadPool::Crew {
 public:
  const pid_t owner = ::getpid();

  ~Crew() { stop_workers(); }

  void run(int threads, int64_t tasks, const Task& task) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    resize(threads);
    if (tasks == 1 || workers_.empty()) {
      for (int64_t t = 0; t < tasks; ++t) task(t, scratch_[0]);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      task_ = &task;
      tasks_ = tasks;
      next_task_ = 0;
      error_ = nullptr;
      error_task_ = -1;
      busy_workers_ = workers_.size();
      ++generation_;
    }
    wake_.notify_all();
    drain(0);
    std::exception_ptr error;
    {
      std::unique_lock<std::mutex> lock(state_mutex_);
      done_.wait(lock, [&] { return busy_workers_ == 0; });
      task_ = nullptr;
      error = error_;
      error_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
  }

 private:
  void resize(int threads) {  // with run_mutex_ held
    const std::size_t wanted_workers = static_cast<std::size_t>(threads - 1);
    if (scratch_.size() < static_cast<std::size_t>(threads)) scratch_.resize(threads);
    if (workers_.size() == wanted_workers) return;
    stop_workers();
    workers_.reserve(wanted_workers);
    for (std::size_t k = 0; k < wanted_workers; ++k)
      workers_.emplace_back([this, k] { worker_loop(k + 1); });
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
    std::lock_guard<std::mutex> lock(state_mutex_);
    stop_ = false;
    generation_ = 0;
  }

  void worker_loop(std::size_t slot) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(state_mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      drain(slot);
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (--busy_workers_ == 0) done_.notify_one();
    }
  }

  void drain(std::size_t slot) {
    for (;;) {
      int64_t t;
      {
        std::lock_guard<std::mutex> lock(state_mutex_);
        if (next_task_ >= tasks_) return;
        t = next_task_++;
      }
      try {
        (*task_)(t, scratch_[slot]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(state_mutex_);
        if (error_task_ < 0 || t < error_task_) {
          error_ = std::current_exception();
          error_task_ = t;
        }
      }
    }
  }

  std::mutex run_mutex_;  // one run at a time; held across a whole run
  std::mutex state_mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  std::vector<Scratch> scratch_;   // [0]: the calling thread; [k + 1]: worker k
  uint64_t generation_ = 0;        // under state_mutex_
  bool stop_ = false;              // under state_mutex_
  std::size_t busy_workers_ = 0;   // under state_mutex_
  const Task* task_ = nullptr;     // set before generation_ changes
  int64_t tasks_ = 0;              // under state_mutex_
  int64_t next_task_ = 0;          // under state_mutex_
  std::exception_ptr error_;       // under state_mutex_
  int64_t error_task_ = -1;        // under state_mutex_
};

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::~ThreadPool() {
  Crew* crew = crew_.load(std::memory_order_acquire);
  // Another process's crew (we are a forked child) is left alone: its threads do not exist
  // here and its condition variables would wait for them forever when destroyed.
  if (crew != nullptr && crew->owner == ::getpid()) {
    const std::unique_ptr<Crew> owned(crew);  // stops and joins the workers
  }
}

void ThreadPool::set_threads(int threads) {
  requested_threads_.store(std::max(1, threads), std::memory_order_relaxed);
}

int ThreadPool::threads() const { return requested_threads_.load(std::memory_order_relaxed); }

ThreadPool::Crew& ThreadPool::crew() {
  Crew* current = crew_.load(std::memory_order_acquire);
  if (current != nullptr && current->owner == ::getpid()) return *current;
  auto fresh = std::make_unique<Crew>();
  // Several first callers may race; one crew wins, the others' are freed. A crew of the
  // parent process (current != NULL) is abandoned, not destroyed (see ~ThreadPool).
  if (crew_.compare_exchange_strong(current, fresh.get(), std::memory_order_acq_rel))
    return *fresh.release();
  return *current;
}

void ThreadPool::run(int64_t tasks, const Task& task) {
  if (tasks <= 0) return;
  crew().run(threads(), tasks, task);
}

void parallel_for(int64_t items, int64_t work_per_item,
                  const std::function<void(int64_t, int64_t, Scratch&)>& body) {
  if (items <= 0) return;
  ThreadPool& pool = ThreadPool::instance();
  const int64_t work = items * std::max<int64_t>(1, work_per_item);
  const int64_t by_work = std::max<int64_t>(1, work / kMinWorkPerTask);
  const int64_t wanted = std::min({items, by_work, kTasksPerThread * pool.threads()});
  const int64_t per_task = (items + wanted - 1) / wanted;
  const int64_t tasks = (items + per_task - 1) / per_task;
  pool.run(tasks, [&](int64_t t, Scratch& scratch) {
    const int64_t begin = t * per_task;
    body(begin, std::min(items, begin + per_task), scratch);
  });
}

int default_threads() {
  const unsigned hardware = std::thread::hardware_concurrency();
  return std::clamp(static_cast<int>(hardware), 1, kMaxDefaultThreads);
}

}  // namespace switchyard::native
