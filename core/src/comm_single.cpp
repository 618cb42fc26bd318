// SingleRankComm: the communicator of a group of one. all_reduce and all_gather both reduce to
// "recv = send", which is nothing at all when the caller works in place.
#include <switchyard/comm.hpp>

#include <switchyard/plugin_helpers.hpp>

#include "comm_cpu.hpp"

#include <cstring>
#include <string>

namespace switchyard {
namespace {

constexpr const char* kCommunicator = "single-rank communicator";

bool host_accessible(DLDevice device) {
  return device.device_type == kDLCPU || device.device_type == kDLCUDAHost ||
         device.device_type == kDLCUDAManaged;
}

// For buffers the CPU cannot touch, only the in-place call (a true no-op) is possible: the
// core does not link CUDA, so it cannot copy device memory.
sy_status device_no_op(DLDevice device, detail::CollectiveKind kind, const void* send,
                       const void* recv, int64_t count, DLDataType dtype, sy_reduce_op op,
                       sy_error* err) {
  const detail::CpuCallCheck check = detail::check_cpu_call(
      kCommunicator, 0, kind, nullptr, nullptr, 0, dtype, op, 1);
  if (check.status != SY_OK) return sy::set_error(err, check.status, "%s", check.message.c_str());
  const std::string where =
      std::string(kCommunicator) + " on " + sy::device_name(device) + ": " +
      detail::collective_name(kind) + ": ";
  if (count < 0) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT, "%scount is %lld; expected a count >= 0.",
                         where.c_str(), static_cast<long long>(count));
  }
  if (count == 0) return SY_OK;
  if (send == nullptr || recv == nullptr) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT, "%s%s is NULL with count %lld.",
                         where.c_str(), send == nullptr ? "send" : "recv",
                         static_cast<long long>(count));
  }
  if (send == recv) return SY_OK;
  return sy::set_error(
      err, SY_ERR_UNSUPPORTED,
      "%ssend (%p) and recv (%p) differ, and copying %s memory needs its runtime, which the core "
      "does not link. Call it in place (send == recv), or use libswitchyard-nccl (NcclComm) for "
      "CUDA buffers.",
      where.c_str(), send, recv, sy::device_name(device).c_str());
}

sy_status copy_send_to_recv(DLDevice device, detail::CollectiveKind kind, const void* send,
                            void* recv, int64_t count, DLDataType dtype, sy_reduce_op op,
                            sy_error* err) {
  return sy::guarded(err, [&]() -> sy_status {
    if (!host_accessible(device)) {
      return device_no_op(device, kind, send, recv, count, dtype, op, err);
    }
    const detail::CpuCallCheck check =
        detail::check_cpu_call(kCommunicator, 0, kind, send, recv, count, dtype, op, 1);
    if (check.status != SY_OK) {
      return sy::set_error(err, check.status, "%s", check.message.c_str());
    }
    // memmove: "send inside recv" may overlap partially. A one-rank reduction is the identity.
    if (check.send_bytes != 0 && send != recv) std::memmove(recv, send, check.send_bytes);
    return SY_OK;
  });
}

}  // namespace

SingleRankComm::SingleRankComm(DLDevice device) {
  comm_.struct_size = sizeof(sy_comm);
  comm_.rank = 0;
  comm_.size = 1;
  comm_.device = device;
  comm_.ctx = this;
  comm_.all_reduce = &SingleRankComm::all_reduce;
  comm_.all_gather = &SingleRankComm::all_gather;
}

sy_status SingleRankComm::all_reduce(void* ctx, const void* send, void* recv, int64_t count,
                                     DLDataType dtype, sy_reduce_op op, void* /*stream*/,
                                     sy_error* err) {
  auto* self = static_cast<SingleRankComm*>(ctx);
  if (self == nullptr) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                         "single-rank communicator: all_reduce: ctx is NULL; pass comm->ctx.");
  }
  ++self->count_;
  return copy_send_to_recv(self->comm_.device, detail::CollectiveKind::AllReduce, send, recv,
                           count, dtype, op, err);
}

sy_status SingleRankComm::all_gather(void* ctx, const void* send, void* recv,
                                     int64_t count_per_rank, DLDataType dtype, void* /*stream*/,
                                     sy_error* err) {
  auto* self = static_cast<SingleRankComm*>(ctx);
  if (self == nullptr) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                         "single-rank communicator: all_gather: ctx is NULL; pass comm->ctx.");
  }
  ++self->count_;
  return copy_send_to_recv(self->comm_.device, detail::CollectiveKind::AllGather, send, recv,
                           count_per_rank, dtype, SY_REDUCE_SUM, err);
}

}  // namespace switchyard
