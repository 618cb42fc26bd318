// Static partition of an index range over a few threads. Each index is handled by exactly one
// thread, so kernels that write disjoint outputs per index stay deterministic.
#ifndef SWITCHYARD_LM_HEAD_PARALLEL_HPP
#define SWITCHYARD_LM_HEAD_PARALLEL_HPP

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace switchyard::lm_head {

// Calls fn(begin, end) on contiguous chunks of [0, count), using at most `threads` threads
// and only as many as give every thread at least `min_per_thread` indices (thread start-up
// costs more than a small loop). fn must not throw.
template <class Fn>
void parallel_for(int64_t count, int threads, int64_t min_per_thread, Fn&& fn) {
  if (count <= 0) return;
  const int64_t by_work = std::max<int64_t>(1, count / std::max<int64_t>(1, min_per_thread));
  const int64_t workers = std::clamp<int64_t>(by_work, 1, std::max(1, threads));
  if (workers == 1) {
    fn(int64_t{0}, count);
    return;
  }
  const int64_t chunk = (count + workers - 1) / workers;
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(workers - 1));
  for (int64_t w = 1; w < workers; ++w) {
    const int64_t begin = std::min(count, w * chunk);
    const int64_t end = std::min(count, begin + chunk);
    if (begin < end) pool.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  fn(int64_t{0}, std::min(count, chunk));
  for (std::thread& t : pool) t.join();
}

}  // namespace switchyard::lm_head

#endif
