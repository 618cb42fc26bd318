// An sy_comm that forwards to another one and counts what passes through, so a test sees the
// collectives a plugin issues (and their kinds) independently of the communicator behind.
#ifndef SWITCHYARD_TESTS_GPU_COUNTING_COMM_HPP
#define SWITCHYARD_TESTS_GPU_COUNTING_COMM_HPP

#include <switchyard/abi.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace gpu_test {

class CountingComm {
 public:
  explicit CountingComm(const sy_comm* inner) : inner_(inner) {
    table_ = *inner;
    table_.struct_size = sizeof table_;
    table_.ctx = this;
    table_.all_reduce = &CountingComm::all_reduce;
    table_.all_gather = inner->all_gather != nullptr ? &CountingComm::all_gather : nullptr;
  }
  CountingComm(const CountingComm&) = delete;
  CountingComm& operator=(const CountingComm&) = delete;

  const sy_comm* get() const { return &table_; }
  int64_t all_reduces() const { return all_reduces_; }
  int64_t all_gathers() const { return all_gathers_; }
  int64_t collectives() const { return all_reduces_ + all_gathers_; }
  // "MAX f32 x9, MIN i64 x9, SUM f32 x18, SUM f32 x9": what was issued, in order.
  std::string trace() const {
    std::string out;
    for (const std::string& call : calls_) out += (out.empty() ? "" : ", ") + call;
    return out.empty() ? "none" : out;
  }
  void reset() {
    all_reduces_ = 0;
    all_gathers_ = 0;
    calls_.clear();
  }

 private:
  static const char* op_name(sy_reduce_op op) {
    return op == SY_REDUCE_SUM ? "SUM" : op == SY_REDUCE_MAX ? "MAX" : op == SY_REDUCE_MIN ? "MIN" : "?";
  }
  static std::string dtype_text(DLDataType d) {
    const char* code = d.code == kDLFloat ? "f" : d.code == kDLBfloat ? "bf" : d.code == kDLInt ? "i" : "?";
    return code + std::to_string(d.bits);
  }
  static sy_status all_reduce(void* ctx, const void* send, void* recv, int64_t count,
                              DLDataType dtype, sy_reduce_op op, void* stream, sy_error* err) {
    auto* self = static_cast<CountingComm*>(ctx);
    ++self->all_reduces_;
    self->calls_.push_back(std::string(op_name(op)) + " " + dtype_text(dtype) + " x" +
                           std::to_string(count));
    return self->inner_->all_reduce(self->inner_->ctx, send, recv, count, dtype, op, stream, err);
  }
  static sy_status all_gather(void* ctx, const void* send, void* recv, int64_t count,
                              DLDataType dtype, void* stream, sy_error* err) {
    auto* self = static_cast<CountingComm*>(ctx);
    ++self->all_gathers_;
    self->calls_.push_back("GATHER " + dtype_text(dtype) + " x" + std::to_string(count));
    return self->inner_->all_gather(self->inner_->ctx, send, recv, count, dtype, stream, err);
  }

  const sy_comm* inner_;
  sy_comm table_{};
  std::atomic<int64_t> all_reduces_{0};
  std::atomic<int64_t> all_gathers_{0};
  std::vector<std::string> calls_;  // one rank, one thread: no lock needed
};

}  // namespace gpu_test

#endif
