/*
 * Switchyard C host API: the C++ host API (switchyard.hpp) as opaque handles, for C and for
 * languages that call C (Python through ctypes + DLPack, Rust, Julia...).
 *
 * C99 and C++17 clean. Fixed-width types only. No function lets an exception or a signal
 * escape: every failure is a sy_status plus a sentence in the caller's sy_error (which may be
 * NULL; see abi.h). Messages longer than sy_error's buffer are cut and end in
 * "... (truncated)"; `switchyard select` prints the full text of a selection error.
 *
 * Ownership: every sy_*_create returns a handle the caller owns and releases with the
 * matching sy_*_destroy (which accepts NULL). Strings returned by the library are owned by
 * the handle they came from and stay valid until it is destroyed. Pointers passed in are
 * borrowed for the duration of the call only, unless a comment says otherwise.
 *
 * Lifetime: an operator (sy_ce, sy_norm_op) keeps its plugin loaded by itself; it may
 * outlive the runtime that created it.
 *
 * Thread-safety: sy_runtime functions may be called concurrently on one runtime. Calls on
 * one operator may run concurrently from several threads (on different outputs, workspaces
 * and streams; see loss.h). A handle must not be destroyed while another thread uses it.
 */
#ifndef SWITCHYARD_SWITCHYARD_H
#define SWITCHYARD_SWITCHYARD_H

#include <switchyard/plugin.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SY_API
#else
#define SY_API __attribute__((visibility("default")))
#endif

typedef struct sy_runtime sy_runtime;           /* resolves settings, selects backends */
typedef struct sy_ce sy_ce;                     /* a cross entropy bound to a problem */
typedef struct sy_norm_op sy_norm_op;           /* a normalization bound to a problem */
typedef struct sy_thread_group sy_thread_group; /* N in-process ranks for CPU tensors */

/* The library's version, e.g. "0.1.0". Static storage. */
SY_API const char* sy_version(void);

/* The name of a status, e.g. "SY_ERR_UNAVAILABLE". Static storage. */
SY_API const char* sy_status_name(sy_status status);

/* ---- runtime ----------------------------------------------------------------------------
 * Options at API level, the highest precedence; an unset field (NULL, or -1 for
 * `deterministic`) is looked up in the command line given here, then the environment
 * (SWITCHYARD_*), then the config file, then the defaults. Caller-owned, read during
 * sy_runtime_create only. Zero-initialise it and set struct_size = sizeof(sy_runtime_options). */
typedef struct sy_runtime_options {
  size_t struct_size;
  const char* cross_entropy; /* backend name or path to a .so; NULL: not set */
  const char* norm;          /* backend name or path to a .so; NULL: not set */
  const char* norm_kind;     /* "LayerNorm" | "RMSNorm" | "L2Norm"; NULL: not set */
  const char* plugin_path;   /* ':'-separated folders or .so files, searched first; NULL: none */
  const char* config_file;   /* INI file; NULL: not set */
  int32_t deterministic;     /* -1: not set, 0: off, 1: refuse NONDETERMINISTIC backends */
  /* Command-line arguments as RuntimeOptions::args: WITHOUT the program name, so pass
   * (argc - 1, argv + 1) from main. Arguments that are not selection flags are ignored.
   * argc 0 / argv NULL: none. */
  int32_t argc;
  const char* const* argv;
} sy_runtime_options;

/* Creates a runtime. `options` may be NULL (everything from command line defaults,
 * environment and config file). Opens no plugin. On success *out is a new handle; on failure
 * *out is NULL. */
SY_API sy_status sy_runtime_create(const sy_runtime_options* options, sy_runtime** out,
                                   sy_error* err);
/* Destroys a runtime (NULL is a no-op). Operators created from it stay usable. */
SY_API void sy_runtime_destroy(sy_runtime* runtime);

/* ---- cross entropy ----------------------------------------------------------------------
 * Selects the cross_entropy backend (opening only its file) and binds it to `problem`
 * (copied). Fails, with the selection error or the plugin's supports() reason, when the
 * backend is missing, cannot run here or cannot serve the problem. */
SY_API sy_status sy_ce_create(const sy_runtime* runtime, const sy_ce_problem* problem,
                              sy_ce** out, sy_error* err);
/* Calls the plugin. args->problem may be NULL: the bound problem is used. Tensors are
 * borrowed as loss.h describes. Thread-safe (see the top of this file). */
SY_API sy_status sy_ce_forward(const sy_ce* op, const sy_ce_forward_args* args, sy_error* err);
SY_API sy_status sy_ce_backward(const sy_ce* op, const sy_ce_backward_args* args,
                                sy_error* err);
/* Workspace bytes the bound problem needs on its device; the caller allocates it. */
SY_API sy_status sy_ce_workspace_size(const sy_ce* op, int64_t* bytes, sy_error* err);
/* The backend's name and version. Owned by `op`; NULL when op is NULL. */
SY_API const char* sy_ce_backend_name(const sy_ce* op);
SY_API const char* sy_ce_backend_version(const sy_ce* op);
/* SY_DETERMINISTIC, SY_NONDETERMINISTIC or SY_DETERMINISM_UNKNOWN (also when op is NULL). */
SY_API sy_determinism sy_ce_determinism(const sy_ce* op);
/* Destroys the operator (NULL is a no-op); unloads the plugin when nothing else uses it. */
SY_API void sy_ce_destroy(sy_ce* op);

/* ---- normalization ----------------------------------------------------------------------
 * As for cross entropy, for the norm family. */
SY_API sy_status sy_norm_op_create(const sy_runtime* runtime, const sy_norm_problem* problem,
                                   sy_norm_op** out, sy_error* err);
SY_API sy_status sy_norm_op_forward(const sy_norm_op* op, const sy_norm_forward_args* args,
                                    sy_error* err);
SY_API sy_status sy_norm_op_backward(const sy_norm_op* op, const sy_norm_backward_args* args,
                                     sy_error* err);
SY_API sy_status sy_norm_op_workspace_size(const sy_norm_op* op, int64_t* bytes, sy_error* err);
SY_API const char* sy_norm_op_backend_name(const sy_norm_op* op);
SY_API const char* sy_norm_op_backend_version(const sy_norm_op* op);
SY_API sy_determinism sy_norm_op_determinism(const sy_norm_op* op);
SY_API void sy_norm_op_destroy(sy_norm_op* op);

/* ---- in-process thread group --------------------------------------------------------------
 * `size` ranks that are `size` threads of this process, for CPU tensors: rank r's thread
 * passes sy_thread_group_comm(group, r) as the `tp` of its calls. Collectives are computed in
 * rank order (bit-identical on every rank). */
SY_API sy_status sy_thread_group_create(int32_t size, sy_thread_group** out, sy_error* err);
/* The communicator of `rank`: owned by the group, valid until it is destroyed; NULL when
 * group is NULL or rank is out of range. One thread per communicator at a time. */
SY_API const sy_comm* sy_thread_group_comm(const sy_thread_group* group, int32_t rank);
/* Destroys the group (NULL is a no-op). No rank may be inside a collective. */
SY_API void sy_thread_group_destroy(sy_thread_group* group);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SWITCHYARD_SWITCHYARD_H */
