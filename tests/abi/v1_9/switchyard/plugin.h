/* TEST ONLY: a "future" ABI v1.9 of this header (the current one plus extra trailing
 * fields), used to check that today's host ignores fields of a newer minor. */
/*
 * Switchyard plugin ABI v1 — the plugin descriptor and its entry point.
 * Growth rule: see abi.h.
 *
 * A plugin is a shared library named libswitchyard-<name>.so that exports exactly one
 * symbol:
 *
 *   SY_PLUGIN_EXPORT const sy_plugin* sy_plugin_v1(const sy_host* host);
 *
 * The entry is cheap: no device work, no threads, no allocation the plugin cannot release at
 * unload. It may be called more than once (each load of the library) and from any thread,
 * but never concurrently with itself. It returns a pointer to a plugin-owned descriptor that
 * stays valid until the library is unloaded, or NULL to refuse (the host then reports that
 * the plugin refused to initialise, together with whatever it logged through host->log).
 * `host` is host-owned and valid until the library is unloaded; the plugin may keep it.
 */
#ifndef SWITCHYARD_PLUGIN_H
#define SWITCHYARD_PLUGIN_H

#include <switchyard/abi.h>
#include <switchyard/loss.h>
#include <switchyard/norm.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SY_PLUGIN_EXPORT __declspec(dllexport)
#else
#define SY_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#define SY_PLUGIN_ENTRY_SYMBOL "sy_plugin_v1"

typedef struct sy_plugin {
  size_t struct_size;
  int32_t abi_major;       /* SY_ABI_MAJOR the plugin was built with */
  int32_t abi_minor;       /* SY_ABI_MINOR the plugin was built with */
  const char* name;        /* [a-z0-9_]+, equal to <name> in libswitchyard-<name>.so */
  const char* version;     /* the plugin's own version, e.g. "1.2.0" */
  const char* vendor;
  const char* description; /* one sentence */
  /* Can it run here? SY_OK, or SY_ERR_UNAVAILABLE with the reason in err (no device, driver
   * too old, missing library...). May touch the driver; thread-safe; may be called often. */
  sy_status (*probe)(sy_error* err);
  const sy_cross_entropy* cross_entropy; /* plugin-owned, static; NULL: family not offered */
  const sy_norm* norm;                   /* plugin-owned, static; NULL: family not offered */
  /* --- 1.1 --- */
  /* Free text: compiler, CUDA version, build options. Plugin-owned, static, may be NULL.
   * Host default when absent: "" (shown as "not stated"). */
  const char* build_info;
  /* --- 1.9 (test only) --- */
  uint64_t future_flags;
  const char* future_text;
  void (*future_hook)(void); /* a host that calls this aborts the test */
} sy_plugin;

typedef const sy_plugin* (*sy_plugin_entry)(const sy_host* host);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SWITCHYARD_PLUGIN_H */
