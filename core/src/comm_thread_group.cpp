// ThreadGroup: N ranks that are N threads of one process, exchanging CPU buffers.
//
// Every collective is two rounds of one generation-counted barrier:
//   1. "arrive": each rank posts its call (buffers, count, dtype, op, its own argument check)
//      and waits for all ranks. Every rank then sees every call, so all of them reach the same
//      verdict (agree, or fail with the same reason) and compute the full result privately,
//      reading the other ranks' send buffers in rank order: bit-identical everywhere.
//   2. "finish": nobody writes recv until every rank has finished reading send buffers, which
//      makes in-place calls (send == recv, or send inside recv) safe.
// A rank that does not arrive within the timeout breaks the group: the waiting ranks fail
// with a message naming the missing ranks, and so does every later call. Nothing hangs.
#include <switchyard/comm.hpp>

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/switchyard.hpp>

#include "comm_cpu.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace switchyard {
namespace {

using detail::CollectiveKind;
using Clock = std::chrono::steady_clock;

constexpr const char* kCommunicator = "thread group";

// One rank's side of a collective, as posted at the barrier.
struct Call {
  CollectiveKind kind = CollectiveKind::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  int64_t count = 0;
  DLDataType dtype{};
  sy_reduce_op op = SY_REDUCE_SUM;
  int64_t sequence = 0;          // 1 for this rank's first collective
  detail::CpuCallCheck check;    // this rank's own argument check
};

struct Verdict {
  sy_status status = SY_OK;
  std::string message;
};

std::string join_ranks(const std::vector<int32_t>& ranks) {
  std::string text;
  for (int32_t rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

}  // namespace

struct ThreadGroup::Impl {
  struct RankContext {
    Impl* group;
    int32_t rank;
  };
  struct RankState {
    std::atomic<int64_t> all_reduces{0};
    std::atomic<int64_t> all_gathers{0};
    std::atomic<bool> busy{false};  // catches two threads using one rank's comm at once
    int64_t sequence = 0;           // touched only by the thread inside the rank's call
    std::vector<unsigned char> result;  // this rank's private result, reused across calls
  };
  enum class Stage { Arrive, Finish };

  Impl(int32_t group_size, int timeout_ms)
      : size(group_size),
        timeout(timeout_ms),
        contexts(static_cast<size_t>(group_size)),
        comms(static_cast<size_t>(group_size)),
        ranks(static_cast<size_t>(group_size)),
        calls(static_cast<size_t>(group_size)),
        arrived(static_cast<size_t>(group_size), 0) {
    for (int32_t r = 0; r < size; ++r) {
      contexts[r] = RankContext{this, r};
      sy_comm& comm = comms[r];
      comm.struct_size = sizeof(sy_comm);
      comm.rank = r;
      comm.size = size;
      comm.device = DLDevice{kDLCPU, 0};
      comm.ctx = &contexts[r];
      comm.all_reduce = &Impl::all_reduce;
      comm.all_gather = &Impl::all_gather;
    }
  }

  static sy_status all_reduce(void* ctx, const void* send, void* recv, int64_t count,
                              DLDataType dtype, sy_reduce_op op, void* /*stream*/,
                              sy_error* err) {
    return dispatch(ctx, CollectiveKind::AllReduce, send, recv, count, dtype, op, err);
  }

  static sy_status all_gather(void* ctx, const void* send, void* recv, int64_t count_per_rank,
                              DLDataType dtype, void* /*stream*/, sy_error* err) {
    return dispatch(ctx, CollectiveKind::AllGather, send, recv, count_per_rank, dtype,
                    SY_REDUCE_SUM, err);
  }

  static sy_status dispatch(void* ctx, CollectiveKind kind, const void* send, void* recv,
                            int64_t count, DLDataType dtype, sy_reduce_op op, sy_error* err) {
    return sy::guarded(err, [&]() -> sy_status {
      const auto* context = static_cast<const RankContext*>(ctx);
      if (context == nullptr) {
        return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                             "thread group: %s: ctx is NULL; pass the comm's own ctx.",
                             detail::collective_name(kind));
      }
      Call call;
      call.kind = kind;
      call.send = send;
      call.recv = recv;
      call.count = count;
      call.dtype = dtype;
      call.op = op;
      return context->group->run(context->rank, std::move(call), err);
    });
  }

  sy_status run(int32_t rank, Call call, sy_error* err) {
    RankState& state = ranks[rank];
    (call.kind == CollectiveKind::AllReduce ? state.all_reduces : state.all_gathers)++;
    if (state.busy.exchange(true)) {
      return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                           "thread group rank %d: %s: this rank is already inside a collective "
                           "on another thread; each rank's comm must be used by one thread at "
                           "a time.",
                           rank, detail::collective_name(call.kind));
    }
    struct Release {
      std::atomic<bool>& busy;
      ~Release() { busy.store(false); }
    } release{state.busy};

    call.sequence = ++state.sequence;
    call.check = detail::check_cpu_call(kCommunicator, rank, call.kind, call.send, call.recv,
                                        call.count, call.dtype, call.op, size);
    const CollectiveKind kind = call.kind;
    const int64_t sequence = call.sequence;
    void* const recv = call.recv;
    const size_t recv_bytes = call.check.recv_bytes;

    std::string failure = arrive_and_wait(rank, Stage::Arrive, &call);
    if (!failure.empty()) return sy::set_error(err, SY_ERR_COMMUNICATION, "%s", failure.c_str());

    // Every rank's call is now visible and stays unchanged until the "finish" round.
    Verdict verdict = agree(rank);
    if (verdict.status == SY_OK) {
      try {
        compute(rank);
      } catch (const std::bad_alloc&) {
        verdict = Verdict{SY_ERR_OUT_OF_MEMORY,
                          "thread group rank " + std::to_string(rank) + ": " +
                              detail::collective_name(kind) + " #" + std::to_string(sequence) +
                              ": out of host memory for the " + std::to_string(recv_bytes) +
                              "-byte result; recv was not written."};
      }
    }

    failure = arrive_and_wait(rank, Stage::Finish, nullptr);
    if (!failure.empty()) return sy::set_error(err, SY_ERR_COMMUNICATION, "%s", failure.c_str());
    if (verdict.status != SY_OK) {
      return sy::set_error(err, verdict.status, "%s", verdict.message.c_str());
    }
    if (recv_bytes != 0) std::memcpy(recv, state.result.data(), recv_bytes);
    return SY_OK;
  }

  // The same verdict on every rank, except that a rank whose own arguments are wrong is told
  // about its own mistake first.
  Verdict agree(int32_t rank) const {
    const Call& mine = calls[rank];
    if (mine.check.status != SY_OK) return Verdict{mine.check.status, mine.check.message};
    const std::string where = "thread group rank " + std::to_string(rank) + ": " +
                              detail::collective_name(mine.kind) + " #" +
                              std::to_string(mine.sequence) + ": ";
    for (int32_t r = 0; r < size; ++r) {
      if (calls[r].check.status != SY_OK) {
        return Verdict{SY_ERR_COMMUNICATION,
                       where + "rank " + std::to_string(r) +
                           " passed invalid arguments, so no rank's recv was written. Rank " +
                           std::to_string(r) + " reported: " + calls[r].check.message};
      }
    }
    const std::string rule =
        " Every rank must call the same collectives in the same order with the same count, "
        "dtype and op; recv was not written.";
    auto disagreement = [&](const char* what, auto describe) {
      std::string values;
      for (int32_t r = 0; r < size; ++r) {
        values += (r == 0 ? "" : ", ") + std::string("rank ") + std::to_string(r) + ": " +
                  describe(calls[r]);
      }
      return Verdict{SY_ERR_INVALID_ARGUMENT,
                     where + "the ranks disagree on the " + what + " (" + values + ")." + rule};
    };
    const Call& first = calls[0];
    for (int32_t r = 1; r < size; ++r) {
      if (calls[r].kind != first.kind) {
        return disagreement("collective", [](const Call& c) {
          return std::string(detail::collective_name(c.kind));
        });
      }
    }
    for (int32_t r = 1; r < size; ++r) {
      if (!same_dtype(calls[r].dtype, first.dtype)) {
        return disagreement("dtype", [](const Call& c) { return detail::dtype_text(c.dtype); });
      }
    }
    for (int32_t r = 1; r < size; ++r) {
      if (calls[r].count != first.count) {
        return disagreement(first.kind == CollectiveKind::AllReduce ? "count" : "count_per_rank",
                            [](const Call& c) { return std::to_string(c.count); });
      }
    }
    if (first.kind == CollectiveKind::AllReduce) {
      for (int32_t r = 1; r < size; ++r) {
        if (calls[r].op != first.op) {
          return disagreement("op", [](const Call& c) { return detail::reduce_op_name(c.op); });
        }
      }
    }
    return Verdict{};
  }

  // Reads every rank's send buffer (in rank order) into this rank's private result.
  void compute(int32_t rank) {
    const Call& mine = calls[rank];
    std::vector<unsigned char>& result = ranks[rank].result;
    result.resize(mine.check.recv_bytes);
    if (mine.count == 0) return;
    if (mine.kind == CollectiveKind::AllGather) {
      const size_t slot = mine.check.send_bytes;
      for (int32_t r = 0; r < size; ++r) {
        std::memcpy(result.data() + static_cast<size_t>(r) * slot, calls[r].send, slot);
      }
      return;
    }
    std::vector<const void*> inputs(static_cast<size_t>(size));
    for (int32_t r = 0; r < size; ++r) inputs[r] = calls[r].send;
    detail::reduce_in_rank_order(inputs.data(), inputs.size(), result.data(), mine.count,
                                 mine.dtype, mine.op);
  }

  // Returns "" once every rank has arrived, or the reason the group is broken.
  std::string arrive_and_wait(int32_t rank, Stage stage, const Call* posted) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!broken.empty()) {
      return "thread group rank " + std::to_string(rank) +
             ": the group is unusable since an earlier collective failed: " + broken;
    }
    if (posted != nullptr) calls[rank] = *posted;
    arrived[rank] = 1;
    if (++arrived_count == size) {
      arrived_count = 0;
      std::fill(arrived.begin(), arrived.end(), 0);
      ++generation;
      lock.unlock();
      changed.notify_all();
      return {};
    }
    const int64_t my_generation = generation;
    const auto deadline = Clock::now() + timeout;
    const bool released = changed.wait_until(lock, deadline, [&] {
      return generation != my_generation || !broken.empty();
    });
    if (generation != my_generation) return {};
    if (released) return broken;  // another rank timed out first and explained why

    std::vector<int32_t> missing, present;
    for (int32_t r = 0; r < size; ++r) (arrived[r] ? present : missing).push_back(r);
    const Call& mine = calls[rank];
    broken = std::string("thread group ") + detail::collective_name(mine.kind) + " #" +
             std::to_string(mine.sequence) + " timed out after " +
             std::to_string(timeout.count()) + " ms: rank" + (missing.size() > 1 ? "s " : " ") +
             join_ranks(missing) + " of " + std::to_string(size) +
             (stage == Stage::Arrive ? " never arrived" : " never finished") + " (rank" +
             (present.size() > 1 ? "s " : " ") + join_ranks(present) +
             (present.size() > 1 ? " were" : " was") +
             " waiting). Every rank must call the same collectives in the same order; a rank "
             "that skips one, returns early or is blocked stalls the others. The group is now "
             "unusable: create a new ThreadGroup.";
    lock.unlock();
    changed.notify_all();
    return broken;
  }

  const int32_t size;
  const std::chrono::milliseconds timeout;
  std::vector<RankContext> contexts;
  std::vector<sy_comm> comms;
  std::vector<RankState> ranks;

  std::mutex mutex;  // guards everything below
  std::condition_variable changed;
  std::vector<Call> calls;     // posted at "arrive"; read by all ranks until "finish"
  std::vector<char> arrived;   // who has arrived in the current round
  int32_t arrived_count = 0;
  int64_t generation = 0;      // rounds completed
  std::string broken;          // why the group failed; empty while it works
};

ThreadGroup::ThreadGroup(int32_t size, int timeout_ms) {
  if (size < 1) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "ThreadGroup: size is " + std::to_string(size) + "; expected at least 1 rank.");
  }
  if (timeout_ms < 1) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "ThreadGroup: timeout_ms is " + std::to_string(timeout_ms) +
                    "; expected a positive number of milliseconds (how long a rank waits for "
                    "the others before the collective fails).");
  }
  impl_ = std::make_unique<Impl>(size, timeout_ms);
}

ThreadGroup::~ThreadGroup() = default;

int32_t ThreadGroup::size() const { return impl_->size; }

namespace {
void check_rank(const char* function, int32_t rank, int32_t size) {
  if (rank < 0 || rank >= size) {
    throw Error(SY_ERR_INVALID_ARGUMENT, std::string("ThreadGroup::") + function + ": rank " +
                                             std::to_string(rank) +
                                             " is out of range; expected 0 <= rank < " +
                                             std::to_string(size) + ".");
  }
}
}  // namespace

const sy_comm* ThreadGroup::comm(int32_t rank) const {
  check_rank("comm", rank, impl_->size);
  return &impl_->comms[rank];
}

int64_t ThreadGroup::collectives(int32_t rank) const {
  check_rank("collectives", rank, impl_->size);
  return impl_->ranks[rank].all_reduces.load() + impl_->ranks[rank].all_gathers.load();
}

int64_t ThreadGroup::all_reduces(int32_t rank) const {
  check_rank("all_reduces", rank, impl_->size);
  return impl_->ranks[rank].all_reduces.load();
}

int64_t ThreadGroup::all_gathers(int32_t rank) const {
  check_rank("all_gathers", rank, impl_->size);
  return impl_->ranks[rank].all_gathers.load();
}

void ThreadGroup::reset_counts() {
  for (Impl::RankState& state : impl_->ranks) {
    state.all_reduces.store(0);
    state.all_gathers.store(0);
  }
}

}  // namespace switchyard
