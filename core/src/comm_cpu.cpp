// Argument checks and the fixed-order reduction shared by the CPU communicators.
#include "comm_cpu.hpp"

#include "comm_cuda_pointer.hpp"

#include <switchyard/float16.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace switchyard::detail {
namespace {

bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

constexpr DLDataType kFloat32{kDLFloat, 32, 1};
constexpr DLDataType kFloat64{kDLFloat, 64, 1};
constexpr DLDataType kBfloat16{kDLBfloat, 16, 1};
constexpr DLDataType kFloat16{kDLFloat, 16, 1};
constexpr DLDataType kInt32{kDLInt, 32, 1};
constexpr DLDataType kInt64{kDLInt, 64, 1};

constexpr const char* kSupportedDtypes = "float32, float64, bfloat16, float16, int32, int64";

// ---- element access: how each dtype is loaded into its accumulator and stored back -------

template <class T>
struct Native {
  using Storage = T;
  using Accumulator = T;
  static Accumulator load(Storage value) { return value; }
  static Storage store(Accumulator value) { return value; }
};

struct Bfloat16 {
  using Storage = uint16_t;
  using Accumulator = float;
  static float load(uint16_t value) { return sy::bf16_to_float(value); }
  static uint16_t store(float value) { return sy::float_to_bf16(value); }
};

struct Float16 {
  using Storage = uint16_t;
  using Accumulator = float;
  static float load(uint16_t value) { return sy::f16_to_float(value); }
  static uint16_t store(float value) { return sy::float_to_f16(value); }
};

// ---- the operators ---------------------------------------------------------------------

template <class A>
A apply(sy_reduce_op op, A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    // NaN wins, so a diverged rank is visible everywhere (as torch.max does).
    if (op != SY_REDUCE_SUM && (std::isnan(a) || std::isnan(b))) return std::isnan(a) ? a : b;
    if (op == SY_REDUCE_SUM) return a + b;
  } else {
    // Integer sums wrap (two's complement) instead of being undefined on overflow.
    using U = std::make_unsigned_t<A>;
    if (op == SY_REDUCE_SUM) return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  }
  if (op == SY_REDUCE_MAX) return a < b ? b : a;
  return b < a ? b : a;
}

template <class Access>
void reduce_typed(const void* const* inputs, size_t input_count, void* out, int64_t count,
                  sy_reduce_op op) {
  using Storage = typename Access::Storage;
  using Accumulator = typename Access::Accumulator;
  constexpr int64_t kChunk = 1024;  // accumulators stay in L1
  Accumulator accumulator[kChunk];
  auto* result = static_cast<Storage*>(out);
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    const int64_t n = std::min(kChunk, count - begin);
    const auto* first = static_cast<const Storage*>(inputs[0]) + begin;
    for (int64_t i = 0; i < n; ++i) accumulator[i] = Access::load(first[i]);
    for (size_t r = 1; r < input_count; ++r) {
      const auto* next = static_cast<const Storage*>(inputs[r]) + begin;
      for (int64_t i = 0; i < n; ++i) accumulator[i] = apply(op, accumulator[i], Access::load(next[i]));
    }
    for (int64_t i = 0; i < n; ++i) result[begin + i] = Access::store(accumulator[i]);
  }
}

}  // namespace

const char* collective_name(CollectiveKind kind) {
  return kind == CollectiveKind::AllReduce ? "all_reduce" : "all_gather";
}

std::string reduce_op_name(sy_reduce_op op) {
  switch (op) {
    case SY_REDUCE_SUM: return "SUM";
    case SY_REDUCE_MAX: return "MAX";
    case SY_REDUCE_MIN: return "MIN";
  }
  return "op " + std::to_string(op);
}

std::string dtype_text(DLDataType dtype) {
  std::string base;
  switch (dtype.code) {
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    default: base = "type_code_" + std::to_string(dtype.code) + "_"; break;
  }
  base += std::to_string(dtype.bits);
  if (dtype.lanes != 1) base += "x" + std::to_string(dtype.lanes);
  return base;
}

size_t cpu_element_bytes(DLDataType dtype) {
  if (same_dtype(dtype, kFloat32) || same_dtype(dtype, kInt32)) return 4;
  if (same_dtype(dtype, kFloat64) || same_dtype(dtype, kInt64)) return 8;
  if (same_dtype(dtype, kBfloat16) || same_dtype(dtype, kFloat16)) return 2;
  return 0;
}

CpuCallCheck check_cpu_call(const char* communicator, int32_t rank, CollectiveKind kind,
                            const void* send, const void* recv, int64_t count, DLDataType dtype,
                            sy_reduce_op op, int32_t group_size) {
  CpuCallCheck check;
  const std::string where = std::string(communicator) + " rank " + std::to_string(rank) + ": " +
                            collective_name(kind) + ": ";
  const char* count_name = kind == CollectiveKind::AllReduce ? "count" : "count_per_rank";
  auto fail = [&](sy_status status, std::string message) {
    check.status = status;
    check.message = where + message;
    return check;
  };

  const size_t element_bytes = cpu_element_bytes(dtype);
  if (element_bytes == 0) {
    return fail(SY_ERR_UNSUPPORTED, "dtype " + dtype_text(dtype) +
                                        " is not supported; supported dtypes: " +
                                        kSupportedDtypes + ".");
  }
  if (kind == CollectiveKind::AllReduce && op != SY_REDUCE_SUM && op != SY_REDUCE_MAX &&
      op != SY_REDUCE_MIN) {
    return fail(SY_ERR_INVALID_ARGUMENT,
                "op is " + std::to_string(op) +
                    "; expected SY_REDUCE_SUM (0), SY_REDUCE_MAX (1) or SY_REDUCE_MIN (2).");
  }
  if (count < 0) {
    return fail(SY_ERR_INVALID_ARGUMENT, std::string(count_name) + " is " +
                                             std::to_string(count) + "; expected a count >= 0.");
  }
  const int64_t received = kind == CollectiveKind::AllReduce ? 1 : group_size;
  const auto limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (static_cast<uint64_t>(count) > limit / element_bytes / static_cast<uint64_t>(received)) {
    return fail(SY_ERR_INVALID_ARGUMENT,
                std::string(count_name) + " is " + std::to_string(count) + " " +
                    dtype_text(dtype) + " elements, which overflows a byte count" +
                    (received > 1 ? " once gathered from " + std::to_string(received) + " ranks"
                                  : std::string()) +
                    ".");
  }
  check.send_bytes = static_cast<size_t>(count) * element_bytes;
  check.recv_bytes = check.send_bytes * static_cast<size_t>(received);
  if (count == 0) return check;  // nothing is touched: NULL buffers are fine

  struct Buffer {
    const char* name;
    const void* pointer;
    int64_t elements;
  };
  for (const Buffer& buffer : {Buffer{"send", send, count}, Buffer{"recv", recv, count * received}}) {
    const std::string expected = "a host buffer of " + std::to_string(buffer.elements) + " " +
                                 dtype_text(dtype) + " elements";
    if (buffer.pointer == nullptr) {
      return fail(SY_ERR_INVALID_ARGUMENT,
                  std::string(buffer.name) + " is NULL; expected " + expected + ".");
    }
    if (is_cuda_device_pointer(buffer.pointer)) {
      return fail(SY_ERR_INVALID_ARGUMENT,
                  std::string(buffer.name) + " is CUDA device memory, but the " + communicator +
                      " handles CPU buffers; use libswitchyard-nccl for CUDA (expected " +
                      expected + ").");
    }
  }
  return check;
}

void reduce_in_rank_order(const void* const* inputs, size_t input_count, void* out,
                          int64_t count, DLDataType dtype, sy_reduce_op op) {
  if (input_count == 0 || count <= 0) return;
  if (same_dtype(dtype, kFloat32)) return reduce_typed<Native<float>>(inputs, input_count, out, count, op);
  if (same_dtype(dtype, kFloat64)) return reduce_typed<Native<double>>(inputs, input_count, out, count, op);
  if (same_dtype(dtype, kInt32)) return reduce_typed<Native<int32_t>>(inputs, input_count, out, count, op);
  if (same_dtype(dtype, kInt64)) return reduce_typed<Native<int64_t>>(inputs, input_count, out, count, op);
  if (same_dtype(dtype, kBfloat16)) return reduce_typed<Bfloat16>(inputs, input_count, out, count, op);
  if (same_dtype(dtype, kFloat16)) return reduce_typed<Float16>(inputs, input_count, out, count, op);
}

}  // namespace switchyard::detail
