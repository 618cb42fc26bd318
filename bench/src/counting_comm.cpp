#include "counting_comm.hpp"

namespace switchyard::bench {

CountingComm::CountingComm(const sy_comm* inner) : inner_(inner) {
  comm_.struct_size = sizeof(sy_comm);
  comm_.rank = inner->rank;
  comm_.size = inner->size;
  comm_.device = inner->device;
  comm_.ctx = this;
  comm_.all_reduce = &CountingComm::all_reduce;
  comm_.all_gather = &CountingComm::all_gather;
}

sy_status CountingComm::all_reduce(void* ctx, const void* send, void* recv, int64_t count,
                                   DLDataType dtype, sy_reduce_op op, void* stream,
                                   sy_error* err) {
  auto* self = static_cast<CountingComm*>(ctx);
  ++self->all_reduces_;
  return self->inner_->all_reduce(self->inner_->ctx, send, recv, count, dtype, op, stream, err);
}

sy_status CountingComm::all_gather(void* ctx, const void* send, void* recv,
                                   int64_t count_per_rank, DLDataType dtype, void* stream,
                                   sy_error* err) {
  auto* self = static_cast<CountingComm*>(ctx);
  ++self->all_gathers_;
  return self->inner_->all_gather(self->inner_->ctx, send, recv, count_per_rank, dtype, stream,
                                  err);
}

}  // namespace switchyard::bench
