// NcclComm: the sy_comm table over an ncclComm_t. Collectives check their arguments on the
// host (cheap, no synchronisation, graph-capture safe) and enqueue NCCL on the caller's stream.
#include <switchyard/nccl.hpp>

#include <switchyard/plugin_helpers.hpp>

#include "nccl_errors.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace switchyard {

struct NcclComm::Impl {
  ncclComm_t native = nullptr;
  bool owned = false;
  int32_t rank = 0;
  int32_t size = 0;
  int32_t device = 0;
  sy_comm table{};
  std::atomic<int64_t> all_reduces{0};
  std::atomic<int64_t> all_gathers{0};

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    // Nothing can be reported from a destructor; a failing destroy leaks the communicator.
    if (owned && native != nullptr) ncclCommDestroy(native);
  }

  std::string where(const char* collective) const {
    return "NcclComm rank " + std::to_string(rank) + " of " + std::to_string(size) + " (cuda:" +
           std::to_string(device) + "): " + collective + ": ";
  }
};

namespace {

using Impl = NcclComm::Impl;

bool to_nccl_dtype(DLDataType dtype, ncclDataType_t* out) {
  if (dtype.lanes != 1) return false;
  switch (dtype.code) {
    case kDLFloat:
      if (dtype.bits == 16) *out = ncclFloat16;
      else if (dtype.bits == 32) *out = ncclFloat32;
      else if (dtype.bits == 64) *out = ncclFloat64;
      else return false;
      return true;
    case kDLBfloat:
      if (dtype.bits != 16) return false;
      *out = ncclBfloat16;
      return true;
    case kDLInt:
      if (dtype.bits == 8) *out = ncclInt8;
      else if (dtype.bits == 32) *out = ncclInt32;
      else if (dtype.bits == 64) *out = ncclInt64;
      else return false;
      return true;
    case kDLUInt:
      if (dtype.bits == 8) *out = ncclUint8;
      else if (dtype.bits == 32) *out = ncclUint32;
      else if (dtype.bits == 64) *out = ncclUint64;
      else return false;
      return true;
    default:
      return false;
  }
}

constexpr const char* kSupportedDtypes =
    "float16, bfloat16, float32, float64, int8, int32, int64, uint8, uint32, uint64";

bool to_nccl_op(sy_reduce_op op, ncclRedOp_t* out) {
  switch (op) {
    case SY_REDUCE_SUM: *out = ncclSum; return true;
    case SY_REDUCE_MAX: *out = ncclMax; return true;
    case SY_REDUCE_MIN: *out = ncclMin; return true;
  }
  return false;
}

// A host pointer passed to NCCL would fault on the GPU or corrupt memory; say so instead.
// An error from the query itself is not the caller's problem: NCCL gets the last word then.
sy_status check_device_buffer(const Impl& impl, const std::string& where, const char* name,
                              const void* pointer, sy_error* err) {
  cudaPointerAttributes attributes{};
  const cudaError_t result = cudaPointerGetAttributes(&attributes, pointer);
  if (result != cudaSuccess) {
    cudaGetLastError();
    return SY_OK;
  }
  if (attributes.type == cudaMemoryTypeUnregistered || attributes.type == cudaMemoryTypeHost) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                         "%s%s is host memory; NCCL needs CUDA device buffers on cuda:%d. Use "
                         "switchyard::ThreadGroup for CPU buffers.",
                         where.c_str(), name, impl.device);
  }
  if (attributes.type == cudaMemoryTypeDevice && attributes.device != impl.device) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                         "%s%s is on cuda:%d, but this communicator's device is cuda:%d.",
                         where.c_str(), name, attributes.device, impl.device);
  }
  return SY_OK;
}

struct Checked {
  ncclDataType_t dtype = ncclFloat32;
  size_t send_bytes = 0;
};

sy_status check_call(const Impl& impl, const std::string& where, const char* count_name,
                     const void* send, const void* recv, int64_t count, DLDataType dtype,
                     int64_t recv_elements_per_send, Checked* checked, sy_error* err) {
  if (count < 0) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT, "%s%s is %lld; expected a count >= 0.",
                         where.c_str(), count_name, static_cast<long long>(count));
  }
  if (!to_nccl_dtype(dtype, &checked->dtype)) {
    return sy::set_error(err, SY_ERR_UNSUPPORTED,
                         "%sdtype %s has no NCCL equivalent; supported dtypes: %s.",
                         where.c_str(), sy::dtype_name(dtype).c_str(), kSupportedDtypes);
  }
  const auto element_bytes = static_cast<uint64_t>((dtype.bits + 7) / 8);
  const auto limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (static_cast<uint64_t>(count) > limit / element_bytes / recv_elements_per_send) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                         "%s%s is %lld, which overflows a byte count.", where.c_str(),
                         count_name, static_cast<long long>(count));
  }
  checked->send_bytes = static_cast<size_t>(count) * element_bytes;
  if (count == 0) return SY_OK;
  if (send == nullptr || recv == nullptr) {
    return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                         "%s%s is NULL with %s %lld; expected a CUDA buffer on cuda:%d.",
                         where.c_str(), send == nullptr ? "send" : "recv", count_name,
                         static_cast<long long>(count), impl.device);
  }
  if (sy_status s = check_device_buffer(impl, where, "send", send, err); s != SY_OK) return s;
  return check_device_buffer(impl, where, "recv", recv, err);
}

Impl* impl_of(void* ctx, const char* collective, sy_error* err) {
  if (ctx == nullptr) {
    sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                  "NcclComm: %s: ctx is NULL; pass the comm's own ctx.", collective);
  }
  return static_cast<Impl*>(ctx);
}

sy_status nccl_all_reduce(void* ctx, const void* send, void* recv, int64_t count,
                          DLDataType dtype, sy_reduce_op op, void* stream, sy_error* err) {
  return sy::guarded(err, [&]() -> sy_status {
    Impl* impl = impl_of(ctx, "all_reduce", err);
    if (impl == nullptr) return SY_ERR_INVALID_ARGUMENT;
    ++impl->all_reduces;
    const std::string where = impl->where("all_reduce");
    Checked checked;
    if (sy_status s = check_call(*impl, where, "count", send, recv, count, dtype, 1, &checked, err);
        s != SY_OK) {
      return s;
    }
    ncclRedOp_t nccl_op;
    if (!to_nccl_op(op, &nccl_op)) {
      return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                           "%sop is %d; expected SY_REDUCE_SUM (0), SY_REDUCE_MAX (1) or "
                           "SY_REDUCE_MIN (2).",
                           where.c_str(), static_cast<int>(op));
    }
    if (count == 0) return SY_OK;
    const auto s = reinterpret_cast<std::uintptr_t>(send);
    const auto r = reinterpret_cast<std::uintptr_t>(recv);
    if (s != r && s < r + checked.send_bytes && r < s + checked.send_bytes) {
      return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                           "%ssend and recv overlap without being equal; pass send == recv for "
                           "in place, or disjoint buffers.",
                           where.c_str());
    }
    const ncclResult_t result =
        ncclAllReduce(send, recv, static_cast<size_t>(count), checked.dtype, nccl_op,
                      impl->native, static_cast<cudaStream_t>(stream));
    if (!nccl_detail::nccl_succeeded(result)) {
      return sy::set_error(
          err, SY_ERR_COMMUNICATION, "%s",
          nccl_detail::nccl_failure(where + "ncclAllReduce of " + std::to_string(count) + " " +
                                        sy::dtype_name(dtype) + " elements",
                                    result, impl->native)
              .c_str());
    }
    return SY_OK;
  });
}

sy_status nccl_all_gather(void* ctx, const void* send, void* recv, int64_t count_per_rank,
                          DLDataType dtype, void* stream, sy_error* err) {
  return sy::guarded(err, [&]() -> sy_status {
    Impl* impl = impl_of(ctx, "all_gather", err);
    if (impl == nullptr) return SY_ERR_INVALID_ARGUMENT;
    ++impl->all_gathers;
    const std::string where = impl->where("all_gather");
    Checked checked;
    if (sy_status s = check_call(*impl, where, "count_per_rank", send, recv, count_per_rank,
                                 dtype, impl->size, &checked, err);
        s != SY_OK) {
      return s;
    }
    if (count_per_rank == 0) return SY_OK;
    // NCCL allows exactly one in-place layout: send is this rank's slot of recv.
    const auto s = reinterpret_cast<std::uintptr_t>(send);
    const auto r = reinterpret_cast<std::uintptr_t>(recv);
    const size_t recv_bytes = checked.send_bytes * static_cast<size_t>(impl->size);
    const std::uintptr_t own_slot = r + checked.send_bytes * static_cast<size_t>(impl->rank);
    if (s != own_slot && s < r + recv_bytes && r < s + checked.send_bytes) {
      return sy::set_error(err, SY_ERR_INVALID_ARGUMENT,
                           "%ssend overlaps recv but is not this rank's slot (recv + %d * "
                           "count_per_rank elements); in place, send must be exactly that slot.",
                           where.c_str(), impl->rank);
    }
    const ncclResult_t result =
        ncclAllGather(send, recv, static_cast<size_t>(count_per_rank), checked.dtype,
                      impl->native, static_cast<cudaStream_t>(stream));
    if (!nccl_detail::nccl_succeeded(result)) {
      return sy::set_error(
          err, SY_ERR_COMMUNICATION, "%s",
          nccl_detail::nccl_failure(where + "ncclAllGather of " +
                                        std::to_string(count_per_rank) + " " +
                                        sy::dtype_name(dtype) + " elements per rank",
                                    result, impl->native)
              .c_str());
    }
    return SY_OK;
  });
}

void fill_table(Impl& impl) {
  impl.table.struct_size = sizeof(sy_comm);
  impl.table.rank = impl.rank;
  impl.table.size = impl.size;
  impl.table.device = DLDevice{kDLCUDA, impl.device};
  impl.table.ctx = &impl;
  impl.table.all_reduce = &nccl_all_reduce;
  impl.table.all_gather = &nccl_all_gather;
}

// Reads rank, size and device from NCCL into impl (device only when it is still unknown).
void query_native(Impl& impl, const char* function, bool ask_device) {
  int value = 0;
  ncclResult_t result = ncclCommUserRank(impl.native, &value);
  if (!nccl_detail::nccl_succeeded(result)) {
    throw Error(SY_ERR_COMMUNICATION,
                nccl_detail::nccl_failure(std::string(function) + ": ncclCommUserRank", result,
                                          impl.native));
  }
  impl.rank = value;
  result = ncclCommCount(impl.native, &value);
  if (!nccl_detail::nccl_succeeded(result)) {
    throw Error(SY_ERR_COMMUNICATION,
                nccl_detail::nccl_failure(std::string(function) + ": ncclCommCount", result,
                                          impl.native));
  }
  impl.size = value;
  if (ask_device) {
    result = ncclCommCuDevice(impl.native, &value);
    if (!nccl_detail::nccl_succeeded(result)) {
      throw Error(SY_ERR_COMMUNICATION,
                  nccl_detail::nccl_failure(std::string(function) + ": ncclCommCuDevice", result,
                                            impl.native));
    }
    impl.device = value;
  }
}

// Checks that `device` exists and, when asked, makes it current (ncclCommInitRank works on
// the current device). Reports a missing GPU or driver plainly.
void use_device(const char* function, int32_t device, bool make_current) {
  int count = 0;
  const cudaError_t result = cudaGetDeviceCount(&count);
  if (result != cudaSuccess) {
    throw Error(SY_ERR_UNAVAILABLE,
                nccl_detail::cuda_failure(std::string(function) +
                                              ": no usable CUDA device: cudaGetDeviceCount",
                                          result));
  }
  if (device < 0 || device >= count) {
    throw Error(SY_ERR_UNAVAILABLE, std::string(function) + ": CUDA device " +
                                        std::to_string(device) + " does not exist; this machine "
                                        "has " + std::to_string(count) + " (cuda:0.." +
                                        std::to_string(count - 1) + ").");
  }
  if (!make_current) return;
  const cudaError_t set = cudaSetDevice(device);
  if (set != cudaSuccess) {
    throw Error(SY_ERR_UNAVAILABLE,
                nccl_detail::cuda_failure(std::string(function) + ": cudaSetDevice(" +
                                              std::to_string(device) + ")",
                                          set));
  }
}

void check_rank(const char* function, int32_t size, int32_t rank) {
  if (size < 1) {
    throw Error(SY_ERR_INVALID_ARGUMENT, std::string(function) + ": size is " +
                                             std::to_string(size) + "; expected at least 1.");
  }
  if (rank < 0 || rank >= size) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                std::string(function) + ": rank is " + std::to_string(rank) +
                    "; expected 0 <= rank < size (" + std::to_string(size) + ").");
  }
}

std::unique_ptr<Impl> init_rank(const char* function, const NcclUniqueId& id, int32_t size,
                                int32_t rank, int32_t device) {
  check_rank(function, size, rank);
  use_device(function, device, true);
  ncclUniqueId native_id;
  std::memcpy(native_id.internal, id.bytes().data(), NcclUniqueId::kBytes);
  auto impl = std::make_unique<Impl>();
  const ncclResult_t result = ncclCommInitRank(&impl->native, size, native_id, rank);
  if (!nccl_detail::nccl_succeeded(result)) {
    throw Error(SY_ERR_COMMUNICATION,
                nccl_detail::nccl_failure(std::string(function) + ": ncclCommInitRank (rank " +
                                              std::to_string(rank) + " of " +
                                              std::to_string(size) + ", cuda:" +
                                              std::to_string(device) + ")",
                                          result, impl->native));
  }
  impl->owned = true;
  impl->rank = rank;
  impl->size = size;
  impl->device = device;
  fill_table(*impl);
  return impl;
}

}  // namespace

NcclComm::NcclComm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NcclComm::NcclComm(NcclComm&& other) noexcept = default;
NcclComm& NcclComm::operator=(NcclComm&& other) noexcept = default;
NcclComm::~NcclComm() = default;

NcclComm NcclComm::wrap(ncclComm* comm, int32_t device) {
  if (comm == nullptr) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "NcclComm::wrap: comm is NULL; expected an ncclComm_t created by "
                "ncclCommInitRank or ncclCommInitAll (or taken from your framework's process "
                "group), or use NcclComm::create_local / NcclComm::create to make one.");
  }
  if (device < -1) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "NcclComm::wrap: device is " + std::to_string(device) +
                    "; expected the communicator's CUDA device (>= 0), or -1 to ask NCCL.");
  }
  auto impl = std::make_unique<Impl>();
  impl->native = comm;
  impl->device = device;
  query_native(*impl, "NcclComm::wrap", device == -1);
  fill_table(*impl);
  return NcclComm(std::move(impl));
}

NcclComm NcclComm::create_local(const NcclUniqueId& id, int32_t size, int32_t rank) {
  return NcclComm(init_rank("NcclComm::create_local", id, size, rank, rank));
}

NcclComm NcclComm::create(const NcclUniqueId& id, int32_t size, int32_t rank, int32_t device) {
  return NcclComm(init_rank("NcclComm::create", id, size, rank, device));
}

std::vector<NcclComm> NcclComm::create_all(const std::vector<int32_t>& devices) {
  const char* function = "NcclComm::create_all";
  if (devices.empty()) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                std::string(function) + ": devices is empty; expected one CUDA device per rank.");
  }
  for (int32_t device : devices) use_device(function, device, true);
  std::vector<ncclComm_t> natives(devices.size(), nullptr);
  const ncclResult_t result =
      ncclCommInitAll(natives.data(), static_cast<int>(devices.size()), devices.data());
  if (!nccl_detail::nccl_succeeded(result)) {
    throw Error(SY_ERR_COMMUNICATION,
                nccl_detail::nccl_failure(std::string(function) + ": ncclCommInitAll (" +
                                              std::to_string(devices.size()) + " ranks)",
                                          result, nullptr));
  }
  // Own every communicator before anything else can throw, so none leaks.
  std::vector<std::unique_ptr<Impl>> impls;
  impls.reserve(natives.size());
  for (size_t i = 0; i < natives.size(); ++i) {
    auto impl = std::make_unique<Impl>();
    impl->native = natives[i];
    impl->owned = true;
    impl->rank = static_cast<int32_t>(i);
    impl->size = static_cast<int32_t>(natives.size());
    impl->device = devices[i];
    fill_table(*impl);
    impls.push_back(std::move(impl));
  }
  std::vector<NcclComm> comms;
  comms.reserve(impls.size());
  for (auto& impl : impls) comms.push_back(NcclComm(std::move(impl)));
  return comms;
}

const sy_comm* NcclComm::get() const { return impl_ ? &impl_->table : nullptr; }
ncclComm* NcclComm::native() const { return impl_ ? impl_->native : nullptr; }
bool NcclComm::owns_native() const { return impl_ && impl_->owned; }
int32_t NcclComm::rank() const { return impl_ ? impl_->rank : -1; }
int32_t NcclComm::size() const { return impl_ ? impl_->size : 0; }
int32_t NcclComm::device() const { return impl_ ? impl_->device : -1; }

int64_t NcclComm::collectives() const { return all_reduces() + all_gathers(); }
int64_t NcclComm::all_reduces() const { return impl_ ? impl_->all_reduces.load() : 0; }
int64_t NcclComm::all_gathers() const { return impl_ ? impl_->all_gathers.load() : 0; }
void NcclComm::reset_counts() {
  if (!impl_) return;
  impl_->all_reduces.store(0);
  impl_->all_gathers.store(0);
}

}  // namespace switchyard
