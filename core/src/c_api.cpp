// The C host API (switchyard.h) over the C++ objects. Every function catches everything.
#include <switchyard/comm.hpp>
#include <switchyard/switchyard.h>
#include <switchyard/switchyard.hpp>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

struct sy_runtime {
  switchyard::Runtime runtime;
};

struct sy_ce {
  switchyard::CrossEntropy op;
};

struct sy_norm_op {
  switchyard::Norm op;
};

struct sy_thread_group {
  switchyard::ThreadGroup group;
  explicit sy_thread_group(int32_t size) : group(size) {}
};

namespace {

constexpr char kTruncated[] = "... (truncated)";

// Writes status and message into err, honouring its struct_size; a message longer than the
// buffer is cut and marked.
sy_status report(sy_error* err, sy_status status, const std::string& message) noexcept {
  if (err == nullptr) return status;
  if (SY_HAS_FIELD(sy_error, status, err->struct_size)) err->status = status;
  if (SY_HAS_FIELD(sy_error, message, err->struct_size)) {
    constexpr std::size_t capacity = sizeof err->message;
    if (message.size() < capacity) {
      std::memcpy(err->message, message.c_str(), message.size() + 1);
    } else {
      const std::size_t keep = capacity - sizeof kTruncated;
      std::memcpy(err->message, message.data(), keep);
      std::memcpy(err->message + keep, kTruncated, sizeof kTruncated);
    }
  }
  return status;
}

sy_status clear(sy_error* err) noexcept { return report(err, SY_OK, ""); }

// Runs fn, turning every exception into a status and a message.
template <class Fn>
sy_status guarded(sy_error* err, Fn&& fn) noexcept {
  try {
    clear(err);
    return fn();
  } catch (const switchyard::Error& e) {
    return report(err, e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return report(err, SY_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return report(err, SY_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return report(err, SY_ERR_INTERNAL, "internal error: unknown exception");
  }
}

sy_status invalid(sy_error* err, const std::string& message) {
  return report(err, SY_ERR_INVALID_ARGUMENT, message);
}

std::vector<std::string> split_path(const char* value) {
  std::vector<std::string> parts;
  std::string part;
  for (const char* c = value; *c != '\0'; ++c) {
    if (*c == ':') {
      if (!part.empty()) parts.push_back(std::move(part));
      part.clear();
    } else {
      part.push_back(*c);
    }
  }
  if (!part.empty()) parts.push_back(std::move(part));
  return parts;
}

// Converts the C options. Returns SY_OK or INVALID_ARGUMENT with the reason in err.
sy_status convert_options(const sy_runtime_options* in, switchyard::RuntimeOptions* out,
                          sy_error* err) {
  if (in == nullptr) return SY_OK;
  if (in->struct_size == 0) {
    return invalid(err, "sy_runtime_options.struct_size is 0; set it to sizeof(sy_runtime_options) (" +
                            std::to_string(sizeof(sy_runtime_options)) + ")");
  }
  const std::size_t size = in->struct_size;
#define SY_OPTION_PRESENT(field) SY_HAS_FIELD(sy_runtime_options, field, size)
  if (SY_OPTION_PRESENT(cross_entropy) && in->cross_entropy != nullptr)
    out->cross_entropy = in->cross_entropy;
  if (SY_OPTION_PRESENT(norm) && in->norm != nullptr) out->norm = in->norm;
  if (SY_OPTION_PRESENT(norm_kind) && in->norm_kind != nullptr) out->norm_kind = in->norm_kind;
  if (SY_OPTION_PRESENT(plugin_path) && in->plugin_path != nullptr)
    out->plugin_path = split_path(in->plugin_path);
  if (SY_OPTION_PRESENT(config_file) && in->config_file != nullptr)
    out->config_file = in->config_file;
  if (SY_OPTION_PRESENT(deterministic)) {
    if (in->deterministic < -1 || in->deterministic > 1) {
      return invalid(err, "sy_runtime_options.deterministic is " +
                              std::to_string(in->deterministic) +
                              ", expected -1 (not set), 0 or 1");
    }
    if (in->deterministic != -1) out->deterministic = in->deterministic == 1;
  }
  if (SY_OPTION_PRESENT(argv)) {
    if (in->argc < 0) {
      return invalid(err, "sy_runtime_options.argc is " + std::to_string(in->argc) +
                              ", expected >= 0");
    }
    if (in->argc > 0 && in->argv == nullptr) {
      return invalid(err, "sy_runtime_options.argv is NULL but argc is " +
                              std::to_string(in->argc));
    }
    for (int32_t i = 0; i < in->argc; ++i) {
      if (in->argv[i] == nullptr) {
        return invalid(err, "sy_runtime_options.argv[" + std::to_string(i) +
                                "] is NULL; argv must hold argc strings");
      }
      out->args.emplace_back(in->argv[i]);
    }
  }
#undef SY_OPTION_PRESENT
  return SY_OK;
}

sy_status null_handle(sy_error* err, const char* function, const char* argument) noexcept {
  try {
    return invalid(err, std::string(function) + ": " + argument + " is NULL");
  } catch (...) {
    return report(err, SY_ERR_INVALID_ARGUMENT, std::string());
  }
}

}  // namespace

extern "C" {

const char* sy_version(void) { return switchyard::version(); }

const char* sy_status_name(sy_status status) { return switchyard::status_name(status); }

// ---- runtime ----------------------------------------------------------------------------

sy_status sy_runtime_create(const sy_runtime_options* options, sy_runtime** out, sy_error* err) {
  if (out == nullptr) return null_handle(err, "sy_runtime_create", "out");
  *out = nullptr;
  return guarded(err, [&]() -> sy_status {
    switchyard::RuntimeOptions converted;
    const sy_status status = convert_options(options, &converted, err);
    if (status != SY_OK) return status;
    auto handle = std::make_unique<sy_runtime>(sy_runtime{switchyard::Runtime(std::move(converted))});
    *out = handle.release();
    return SY_OK;
  });
}

void sy_runtime_destroy(sy_runtime* runtime) {
  try {
    std::unique_ptr<sy_runtime> owned(runtime);
  } catch (...) {
  }
}

// ---- cross entropy ----------------------------------------------------------------------

sy_status sy_ce_create(const sy_runtime* runtime, const sy_ce_problem* problem, sy_ce** out,
                       sy_error* err) {
  if (out == nullptr) return null_handle(err, "sy_ce_create", "out");
  *out = nullptr;
  if (runtime == nullptr) return null_handle(err, "sy_ce_create", "runtime");
  if (problem == nullptr) return null_handle(err, "sy_ce_create", "problem");
  return guarded(err, [&]() -> sy_status {
    auto handle = std::make_unique<sy_ce>(sy_ce{runtime->runtime.cross_entropy(*problem)});
    *out = handle.release();
    return SY_OK;
  });
}

sy_status sy_ce_forward(const sy_ce* op, const sy_ce_forward_args* args, sy_error* err) {
  if (op == nullptr) return null_handle(err, "sy_ce_forward", "op");
  if (args == nullptr) return null_handle(err, "sy_ce_forward", "args");
  return op->op.forward(*args, err);
}

sy_status sy_ce_backward(const sy_ce* op, const sy_ce_backward_args* args, sy_error* err) {
  if (op == nullptr) return null_handle(err, "sy_ce_backward", "op");
  if (args == nullptr) return null_handle(err, "sy_ce_backward", "args");
  return op->op.backward(*args, err);
}

sy_status sy_ce_workspace_size(const sy_ce* op, int64_t* bytes, sy_error* err) {
  if (op == nullptr) return null_handle(err, "sy_ce_workspace_size", "op");
  if (bytes == nullptr) return null_handle(err, "sy_ce_workspace_size", "bytes");
  *bytes = op->op.workspace_size();
  return clear(err);
}

const char* sy_ce_backend_name(const sy_ce* op) {
  return op != nullptr ? op->op.backend().name.c_str() : nullptr;
}

const char* sy_ce_backend_version(const sy_ce* op) {
  return op != nullptr ? op->op.backend().version.c_str() : nullptr;
}

sy_determinism sy_ce_determinism(const sy_ce* op) {
  return op != nullptr ? op->op.backend().determinism : SY_DETERMINISM_UNKNOWN;
}

void sy_ce_destroy(sy_ce* op) {
  try {
    std::unique_ptr<sy_ce> owned(op);
  } catch (...) {
  }
}

// ---- normalization ----------------------------------------------------------------------

sy_status sy_norm_op_create(const sy_runtime* runtime, const sy_norm_problem* problem,
                            sy_norm_op** out, sy_error* err) {
  if (out == nullptr) return null_handle(err, "sy_norm_op_create", "out");
  *out = nullptr;
  if (runtime == nullptr) return null_handle(err, "sy_norm_op_create", "runtime");
  if (problem == nullptr) return null_handle(err, "sy_norm_op_create", "problem");
  return guarded(err, [&]() -> sy_status {
    auto handle = std::make_unique<sy_norm_op>(sy_norm_op{runtime->runtime.norm(*problem)});
    *out = handle.release();
    return SY_OK;
  });
}

sy_status sy_norm_op_forward(const sy_norm_op* op, const sy_norm_forward_args* args,
                             sy_error* err) {
  if (op == nullptr) return null_handle(err, "sy_norm_op_forward", "op");
  if (args == nullptr) return null_handle(err, "sy_norm_op_forward", "args");
  return op->op.forward(*args, err);
}

sy_status sy_norm_op_backward(const sy_norm_op* op, const sy_norm_backward_args* args,
                              sy_error* err) {
  if (op == nullptr) return null_handle(err, "sy_norm_op_backward", "op");
  if (args == nullptr) return null_handle(err, "sy_norm_op_backward", "args");
  return op->op.backward(*args, err);
}

sy_status sy_norm_op_workspace_size(const sy_norm_op* op, int64_t* bytes, sy_error* err) {
  if (op == nullptr) return null_handle(err, "sy_norm_op_workspace_size", "op");
  if (bytes == nullptr) return null_handle(err, "sy_norm_op_workspace_size", "bytes");
  *bytes = op->op.workspace_size();
  return clear(err);
}

const char* sy_norm_op_backend_name(const sy_norm_op* op) {
  return op != nullptr ? op->op.backend().name.c_str() : nullptr;
}

const char* sy_norm_op_backend_version(const sy_norm_op* op) {
  return op != nullptr ? op->op.backend().version.c_str() : nullptr;
}

sy_determinism sy_norm_op_determinism(const sy_norm_op* op) {
  return op != nullptr ? op->op.backend().determinism : SY_DETERMINISM_UNKNOWN;
}

void sy_norm_op_destroy(sy_norm_op* op) {
  try {
    std::unique_ptr<sy_norm_op> owned(op);
  } catch (...) {
  }
}

// ---- thread group -----------------------------------------------------------------------

sy_status sy_thread_group_create(int32_t size, sy_thread_group** out, sy_error* err) {
  if (out == nullptr) return null_handle(err, "sy_thread_group_create", "out");
  *out = nullptr;
  return guarded(err, [&]() -> sy_status {
    if (size < 1) {
      return invalid(err, "sy_thread_group_create: size is " + std::to_string(size) +
                              ", expected at least 1 rank");
    }
    auto handle = std::make_unique<sy_thread_group>(size);
    *out = handle.release();
    return SY_OK;
  });
}

const sy_comm* sy_thread_group_comm(const sy_thread_group* group, int32_t rank) {
  if (group == nullptr || rank < 0 || rank >= group->group.size()) return nullptr;
  try {
    return group->group.comm(rank);
  } catch (...) {
    return nullptr;
  }
}

void sy_thread_group_destroy(sy_thread_group* group) {
  try {
    std::unique_ptr<sy_thread_group> owned(group);
  } catch (...) {
  }
}

}  // extern "C"
