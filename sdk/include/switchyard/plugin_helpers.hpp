// C++17 helpers for plugin authors. Header-only; nothing here crosses the ABI.
//
//   - sy::Failure: throw it anywhere inside a plugin call to return a status and a message.
//   - sy::guarded(err, fn): runs fn, turns sy::Failure into its status and any other
//     exception into SY_ERR_INTERNAL with what(); nothing ever leaves the plugin.
//   - sy::set_error: printf-style error writing that honours err->struct_size.
//   - tensor checks that produce the messages the conformance suite expects: they name the
//     argument and the expected vs. actual value.
//   - the small argument checks every entry point repeats: struct sizes, data dtypes, the
//     workspace, overflow-checked sizes.
// Whether two tensors share memory is in <switchyard/tensor_layout.hpp>; the ABI's rules for
// cross-entropy and norm arguments are in <switchyard/ce_checks.hpp> and
// <switchyard/norm_checks.hpp>.
#ifndef SWITCHYARD_PLUGIN_HELPERS_HPP
#define SWITCHYARD_PLUGIN_HELPERS_HPP

#include <switchyard/plugin.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace sy {

// Writes status and a formatted message into err (which may be NULL). Returns status.
inline sy_status set_error(sy_error* err, sy_status status, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

inline sy_status set_error(sy_error* err, sy_status status, const char* format, ...) {
  if (err == nullptr) return status;
  if (SY_HAS_FIELD(sy_error, status, err->struct_size)) err->status = status;
  if (SY_HAS_FIELD(sy_error, message, err->struct_size)) {
    va_list ap;
    va_start(ap, format);
    std::vsnprintf(err->message, sizeof err->message, format, ap);
    va_end(ap);
  }
  return status;
}

inline sy_status clear_error(sy_error* err) {
  if (err != nullptr) {
    if (SY_HAS_FIELD(sy_error, status, err->struct_size)) err->status = SY_OK;
    if (SY_HAS_FIELD(sy_error, message, err->struct_size)) err->message[0] = '\0';
  }
  return SY_OK;
}

// An error with a status, thrown inside a plugin and caught by guarded().
class Failure : public std::exception {
 public:
  Failure(sy_status status, std::string message)
      : status_(status), message_(std::move(message)) {}
  sy_status status() const noexcept { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  sy_status status_;
  std::string message_;
};

[[noreturn]] inline void fail(sy_status status, const std::string& message) {
  throw Failure(status, message);
}
// The caller's fault: a request that cannot mean anything.
[[noreturn]] inline void invalid_argument(const std::string& message) {
  fail(SY_ERR_INVALID_ARGUMENT, message);
}
// A valid request this plugin does not serve.
[[noreturn]] inline void unsupported(const std::string& message) {
  fail(SY_ERR_UNSUPPORTED, message);
}

// Runs fn() (which returns void or sy_status) so that no exception crosses the ABI.
template <class Fn>
sy_status guarded(sy_error* err, Fn&& fn) noexcept {
  try {
    clear_error(err);
    if constexpr (std::is_same_v<decltype(fn()), void>) {
      fn();
      return SY_OK;
    } else {
      return fn();
    }
  } catch (const Failure& f) {
    return set_error(err, f.status(), "%s", f.what());
  } catch (const std::bad_alloc&) {
    return set_error(err, SY_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return set_error(err, SY_ERR_INTERNAL, "internal error (C++ exception): %s", e.what());
  } catch (...) {
    return set_error(err, SY_ERR_INTERNAL, "internal error: unknown C++ exception");
  }
}

// ---- message text --------------------------------------------------------------------------

// A float as printf's "%g" writes it: "1e-05", "0.1", "nan".
inline std::string float_text(float value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(value));
  return buffer;
}

// A bit set in hexadecimal: "0x10".
inline std::string hex_text(uint32_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%x", static_cast<unsigned>(value));
  return buffer;
}

// ---- dtypes and devices -------------------------------------------------------------------

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};
constexpr DLDataType kBF16{kDLBfloat, 16, 1};
constexpr DLDataType kF64{kDLFloat, 64, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

inline bool same(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool same(DLDevice a, DLDevice b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

inline std::string dtype_name(DLDataType t) {
  std::string base;
  switch (t.code) {
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    default: base = "code" + std::to_string(t.code) + "_"; break;
  }
  base += std::to_string(t.bits);
  if (t.lanes != 1) base += "x" + std::to_string(t.lanes);
  return base;
}

inline std::string device_name(DLDevice d) {
  std::string base;
  switch (d.device_type) {
    case kDLCPU: base = "cpu"; break;
    case kDLCUDA: base = "cuda"; break;
    case kDLCUDAHost: base = "cuda_host"; break;
    case kDLCUDAManaged: base = "cuda_managed"; break;
    default: base = "device_type_" + std::to_string(static_cast<int>(d.device_type)); break;
  }
  return base + ":" + std::to_string(d.device_id);
}

// Returns the SY_DTYPE_* bit of a data dtype, 0 when it is not one.
inline uint32_t dtype_bit(DLDataType t) {
  if (same(t, kF32)) return SY_DTYPE_F32;
  if (same(t, kF16)) return SY_DTYPE_F16;
  if (same(t, kBF16)) return SY_DTYPE_BF16;
  return 0;
}

// Throws SY_ERR_UNSUPPORTED unless `dtype` is a data dtype of the ABI (float32, bfloat16,
// float16); `field` names the problem field and `plugin` the backend that refuses it.
inline void require_data_dtype(DLDataType dtype, const char* field, const char* plugin) {
  if (dtype_bit(dtype) != 0) return;
  fail(SY_ERR_UNSUPPORTED, std::string("problem.") + field + " = " + dtype_name(dtype) +
                               " is not supported by " + plugin +
                               "; supported: float32, bfloat16, float16");
}

// ---- argument structs and sizes -----------------------------------------------------------

// Throws SY_ERR_INVALID_ARGUMENT when a caller-filled struct is older than the ABI v1.0 form
// the plugin reads; `what` names it ("problem", "args", "tp").
inline void require_struct_size(size_t given, size_t required, const char* what) {
  if (given < required)
    fail(SY_ERR_INVALID_ARGUMENT,
         std::string(what) + ".struct_size = " + std::to_string(given) + " is smaller than the " +
             std::to_string(required) +
             " bytes of its ABI v1.0 form; set struct_size = sizeof(the struct)");
}

// a * b for non-negative sizes, or SY_ERR_INVALID_ARGUMENT naming `what` when it does not fit
// an int64.
inline int64_t checked_multiply(int64_t a, int64_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a)
    fail(SY_ERR_INVALID_ARGUMENT,
         std::string(what) + " overflows: " + std::to_string(a) + " x " + std::to_string(b));
  return a * b;
}

inline int64_t align_up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Throws SY_ERR_INVALID_ARGUMENT unless the caller's workspace covers the `required` bytes
// `plugin` asked for with workspace_size(), is set when required > 0 and, when `alignment` > 1,
// starts on a multiple of `alignment` bytes.
inline void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required,
                              const char* plugin, int64_t alignment = 1) {
  if (workspace_bytes < required)
    fail(SY_ERR_INVALID_ARGUMENT,
         "workspace_bytes = " + std::to_string(workspace_bytes) + " is too small: " + plugin +
             " needs " + std::to_string(required) +
             " bytes for this problem; allocate workspace_size(problem) bytes");
  if (required <= 0) return;
  if (workspace == nullptr)
    fail(SY_ERR_INVALID_ARGUMENT, std::string("workspace is NULL but ") + plugin + " needs " +
                                      std::to_string(required) +
                                      " bytes for this problem (workspace_size)");
  if (alignment > 1 &&
      reinterpret_cast<uintptr_t>(workspace) % static_cast<uintptr_t>(alignment) != 0)
    fail(SY_ERR_INVALID_ARGUMENT,
         "workspace is not " + std::to_string(alignment) +
             "-byte aligned; pass the start of an allocation (cudaMalloc returns 256-byte "
             "aligned memory) or an offset that is a multiple of " +
             std::to_string(alignment));
}

// ---- tensor checks ------------------------------------------------------------------------

inline std::string shape_string(const int64_t* shape, int ndim) {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Row stride (in elements) of a 2-D tensor; the compact stride when strides is NULL.
inline int64_t row_stride(const DLTensor& t) {
  return t.strides != nullptr ? t.strides[0] : t.shape[1];
}

template <class T>
T* data_as(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

// Checks a tensor's presence, device, dtype and shape. 2-D tensors may have strided rows
// (row stride >= columns) but the last dimension must be unit-stride; 1-D tensors must be
// unit-stride. Throws sy::Failure(SY_ERR_INVALID_ARGUMENT) naming `name`.
inline void check_tensor(const DLTensor* t, const char* name, DLDataType dtype, DLDevice device,
                         std::initializer_list<int64_t> shape) {
  const int ndim = static_cast<int>(shape.size());
  if (t == nullptr) fail(SY_ERR_INVALID_ARGUMENT, std::string(name) + " is required but NULL");
  if (t->data == nullptr && [&] {
        int64_t n = 1;
        for (int64_t s : shape) n *= s;
        return n > 0;
      }())
    fail(SY_ERR_INVALID_ARGUMENT, std::string(name) + ".data is NULL");
  if (!same(t->device, device))
    fail(SY_ERR_INVALID_ARGUMENT, std::string(name) + " is on device " + device_name(t->device) +
                                      ", expected " + device_name(device));
  if (!same(t->dtype, dtype))
    fail(SY_ERR_INVALID_ARGUMENT, std::string(name) + " has dtype " + dtype_name(t->dtype) +
                                      ", expected " + dtype_name(dtype));
  if (t->ndim != ndim || !std::equal(shape.begin(), shape.end(), t->shape))
    fail(SY_ERR_INVALID_ARGUMENT,
         std::string(name) + " has shape " + shape_string(t->shape, t->ndim) + ", expected " +
             shape_string(shape.begin(), ndim));
  if (t->strides != nullptr) {
    if (t->strides[ndim - 1] != 1 && t->shape[ndim - 1] > 1)
      fail(SY_ERR_INVALID_ARGUMENT, std::string(name) + " has last-dimension stride " +
                                        std::to_string(t->strides[ndim - 1]) +
                                        ", expected 1 (rows may be strided, elements may not)");
    if (ndim == 2 && t->shape[0] > 1 && t->strides[0] < t->shape[1])
      fail(SY_ERR_INVALID_ARGUMENT, std::string(name) + " has row stride " +
                                        std::to_string(t->strides[0]) +
                                        ", smaller than its row length " +
                                        std::to_string(t->shape[1]) + " (rows overlap)");
  }
}

// A rule a plugin adds to each tensor after check_tensor accepted it (an alignment, say); the
// argument checks of <switchyard/ce_checks.hpp> and <switchyard/norm_checks.hpp> take one.
using TensorRule = void (*)(const DLTensor* tensor, const char* name);

// check_tensor for the tensors of one call (one device), each followed by the plugin's rule.
class TensorChecker {
 public:
  TensorChecker(DLDevice device, TensorRule extra) : device_(device), extra_(extra) {}
  void operator()(const DLTensor* t, const char* name, DLDataType dtype,
                  std::initializer_list<int64_t> shape) const {
    check_tensor(t, name, dtype, device_, shape);
    if (extra_ != nullptr) extra_(t, name);
  }

 private:
  DLDevice device_;
  TensorRule extra_;
};

// ---- logging ------------------------------------------------------------------------------

// Logs through the host, if the host gave a log function. `host` may be NULL.
inline void log(const sy_host* host, sy_log_level level, const char* plugin,
                const std::string& message) {
  if (host != nullptr && SY_HAS_FIELD(sy_host, log, host->struct_size) && host->log != nullptr)
    host->log(level, plugin, message.c_str());
}

// Reads a plugin option through the host; NULL when unset or the host has no option().
inline const char* option(const sy_host* host, const char* plugin, const char* key) {
  if (host != nullptr && SY_HAS_FIELD(sy_host, option, host->struct_size) &&
      host->option != nullptr)
    return host->option(plugin, key);
  return nullptr;
}

}  // namespace sy

#endif  // SWITCHYARD_PLUGIN_HELPERS_HPP
