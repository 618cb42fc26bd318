/* TEST ONLY: a "future" ABI v1.9 of this header (the current one plus extra trailing
 * fields), used to check that today's host ignores fields of a newer minor. */
/*
 * Switchyard plugin ABI, version 1 — versions, status, errors, collectives, host services.
 *
 * This header is C99 and C++17 clean and depends only on <dlpack/dlpack.h>.
 *
 * Growth rule (read this before changing any struct in the SDK):
 *   - Every struct begins with `size_t struct_size`, set by whoever fills the struct to
 *     sizeof(the struct as that side compiled it).
 *   - A minor release (SY_ABI_MINOR + 1) only APPENDS fields at the end of structs. Nothing
 *     is removed, reordered, resized or re-typed. Released minors are frozen.
 *   - A reader touches a field only when the writer's struct_size covers it:
 *     SY_HAS_FIELD(T, field, struct_size). A field the writer did not have takes the
 *     documented default of the reader (see each field's "default" note).
 *   - A different major is a different ABI: the entry symbol carries the major in its name
 *     (sy_plugin_v1), and the host skips a descriptor whose abi_major differs.
 *
 * History:
 *   1.0  first release.
 *   1.1  sy_plugin.build_info; sy_cross_entropy.forward_collectives.
 *   1.9  (test only) trailing fields in sy_plugin, sy_cross_entropy, sy_norm.
 */
#ifndef SWITCHYARD_ABI_H
#define SWITCHYARD_ABI_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SY_ABI_MAJOR 1
#define SY_ABI_MINOR 9

/* True when a struct of type T whose writer set `size` as struct_size contains `field`. */
#define SY_HAS_FIELD(T, field, size) \
  ((size_t)(offsetof(T, field) + sizeof(((T*)0)->field)) <= (size_t)(size))

/* ---------------------------------------------------------------------------------------
 * Status. Stored as int32_t so that its width never depends on the compiler's enum size.
 * ------------------------------------------------------------------------------------- */
typedef int32_t sy_status;
enum {
  SY_OK = 0,
  SY_ERR_INVALID_ARGUMENT = 1, /* caller's fault: shape, dtype, stride, device, value */
  SY_ERR_UNSUPPORTED = 2,      /* a valid request this backend does not implement */
  SY_ERR_UNAVAILABLE = 3,      /* cannot run on this machine: no device, driver, arch, lib */
  SY_ERR_OUT_OF_MEMORY = 4,
  SY_ERR_COMMUNICATION = 5,    /* a collective failed */
  SY_ERR_INTERNAL = 6          /* a bug, or an exception caught at the ABI boundary */
};

#define SY_ERROR_MESSAGE_BYTES 1024

/* Error report. Caller-owned (usually on the caller's stack); every function that takes a
 * `sy_error* err` accepts NULL. The callee writes `status` and a NUL-terminated sentence that
 * names the argument and the expected vs. actual value. Nothing in it needs freeing. A
 * callee writes `message` only when err->struct_size covers it. */
typedef struct sy_error {
  size_t struct_size;
  sy_status status;
  char message[SY_ERROR_MESSAGE_BYTES];
} sy_error;

/* ---------------------------------------------------------------------------------------
 * Collectives. Plugins never see NCCL or threads: the host hands them this table.
 * ------------------------------------------------------------------------------------- */
typedef int32_t sy_reduce_op;
enum { SY_REDUCE_SUM = 0, SY_REDUCE_MAX = 1, SY_REDUCE_MIN = 2 };

/* A communicator over the tensor-parallel group. Host-owned; valid for as long as the host
 * object that handed it out (a thread group, an NCCL wrapper) lives. A plugin may keep the
 * pointer for the duration of one call only.
 *
 * Both functions are collective: every rank of the group calls them in the same order with
 * the same count and dtype. In place is allowed (send == recv for all_reduce; for all_gather
 * send may point at this rank's slot inside recv). `stream` is a cudaStream_t for CUDA
 * buffers and ignored for CPU buffers; the operation is ordered on it and may complete
 * asynchronously. Different communicators may be used concurrently from different threads;
 * one communicator is used by one thread at a time. */
typedef struct sy_comm {
  size_t struct_size;
  int32_t rank;     /* this caller's rank, 0 <= rank < size */
  int32_t size;     /* number of ranks */
  DLDevice device;  /* where the buffers passed to this communicator live */
  void* ctx;        /* host-owned, opaque; passed back as the first argument */
  /* recv[i] = op over ranks of send[i], for i < count. send, recv: borrowed. */
  sy_status (*all_reduce)(void* ctx, const void* send, void* recv, int64_t count,
                          DLDataType dtype, sy_reduce_op op, void* stream, sy_error* err);
  /* recv[r * count_per_rank + i] = send of rank r, [i]. recv holds size * count_per_rank
   * elements. send, recv: borrowed. */
  sy_status (*all_gather)(void* ctx, const void* send, void* recv, int64_t count_per_rank,
                          DLDataType dtype, void* stream, sy_error* err);
} sy_comm;

/* ---------------------------------------------------------------------------------------
 * Host services.
 * ------------------------------------------------------------------------------------- */
typedef int32_t sy_log_level;
enum { SY_LOG_TRACE = 0, SY_LOG_DEBUG = 1, SY_LOG_INFO = 2, SY_LOG_WARN = 3, SY_LOG_ERROR = 4 };

/* Host-owned; valid from the entry call until the plugin's library is unloaded. The plugin
 * may keep the pointer. All functions are thread-safe and may be called from any thread. */
typedef struct sy_host {
  size_t struct_size;
  int32_t abi_major;
  int32_t abi_minor;
  const char* host_version; /* host-owned, static, e.g. "0.1.0" */
  /* Emits one log line attributed to `plugin` (the plugin's name). Both strings are
   * borrowed for the duration of the call. Filtered by the host's SWITCHYARD_LOG_LEVEL. */
  void (*log)(sy_log_level level, const char* plugin, const char* message);
  /* Returns the value of the plugin's option `key` (config file, environment or API), or
   * NULL when not set. The returned string is host-owned and stays valid until the library
   * is unloaded. Plugins read settings through this, never through getenv. */
  const char* (*option)(const char* plugin, const char* key);
} sy_host;

/* ---------------------------------------------------------------------------------------
 * Capabilities shared by both families.
 * ------------------------------------------------------------------------------------- */
typedef int32_t sy_determinism;
enum {
  SY_DETERMINISM_UNKNOWN = 0,
  SY_DETERMINISTIC = 1,    /* bit-exact run to run AND independent of how rows are batched */
  SY_NONDETERMINISTIC = 2
};

/* Data dtype bits, for the `dtypes` field of the family tables. */
#define SY_DTYPE_F32 (1u << 0)
#define SY_DTYPE_F16 (1u << 1)
#define SY_DTYPE_BF16 (1u << 2)

/* Device bits, for the `devices` field of the family tables. */
#define SY_DEVICE_BIT(device_type) (1u << (uint32_t)(device_type))

/* Shared feature bit: calls never synchronise the host with the stream, allocate nothing
 * and may be recorded into a CUDA graph. */
#define SY_FEATURE_GRAPH_CAPTURE (1u << 31)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SWITCHYARD_ABI_H */
