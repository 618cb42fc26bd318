/*
 * libswitchyard-nccl, C API: an sy_comm over NCCL, for hosts written in C or driven through a
 * foreign-function interface (Python ctypes). The C++ API is <switchyard/nccl.hpp>.
 *
 * Plugins never see NCCL: the host builds an sy_nccl_comm and passes sy_nccl_comm_get(comm)
 * as the `tp` communicator. Buffers passed to its collectives are CUDA device (or managed)
 * memory; the operation is enqueued on the `stream` argument (a cudaStream_t) and completes
 * asynchronously, exactly like ncclAllReduce / ncclAllGather.
 *
 * Ownership, per pointer:
 *   - sy_nccl_comm*: created by sy_nccl_comm_wrap / sy_nccl_comm_create*, owned by the caller,
 *     released with sy_nccl_comm_destroy.
 *   - the ncclComm_t given to sy_nccl_comm_wrap: borrowed; the caller keeps owning it and must
 *     keep it alive until sy_nccl_comm_destroy; it is never destroyed here.
 *   - the ncclComm_t created by sy_nccl_comm_create*: owned by the sy_nccl_comm, destroyed by
 *     sy_nccl_comm_destroy (ncclCommDestroy).
 *   - the const sy_comm* from sy_nccl_comm_get: owned by the sy_nccl_comm, valid until
 *     sy_nccl_comm_destroy.
 * Errors: every function that can fail returns sy_status and fills a caller-owned sy_error
 * (may be NULL); NCCL failures are SY_ERR_COMMUNICATION and carry NCCL's own message.
 */
#ifndef SWITCHYARD_NCCL_H
#define SWITCHYARD_NCCL_H

#include <switchyard/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An ncclUniqueId is 128 bytes; its text form is 256 lowercase hex digits. */
#define SY_NCCL_UNIQUE_ID_BYTES 128
#define SY_NCCL_UNIQUE_ID_HEX_CHARS 256

typedef struct sy_nccl_comm sy_nccl_comm; /* opaque */

/* Creates a new NCCL unique id (ncclGetUniqueId) and writes it as SY_NCCL_UNIQUE_ID_HEX_CHARS
 * hex digits plus a NUL into `hex`, whose capacity must be at least
 * SY_NCCL_UNIQUE_ID_HEX_CHARS + 1 bytes. One process (rank 0, or the launcher) calls this
 * and hands the text to every rank, e.g. in an environment variable or on the command line. */
sy_status sy_nccl_get_unique_id(char* hex, size_t capacity, sy_error* err);

/* Wraps a communicator the caller created (ncclCommInitRank, ncclCommInitAll, a framework's
 * process group). `nccl_comm` is an ncclComm_t, borrowed. `device` is the CUDA device of the
 * communicator's buffers, or -1 to ask NCCL (ncclCommCuDevice). Rank and size come from NCCL. */
sy_status sy_nccl_comm_wrap(void* nccl_comm, int32_t device, sy_nccl_comm** out, sy_error* err);

/* One rank of `size` processes on this machine, one GPU each: rank r uses CUDA device r.
 * Collective: blocks until all `size` ranks have called it with the same unique id. */
sy_status sy_nccl_comm_create_local(const char* unique_id_hex, int32_t size, int32_t rank,
                                    sy_nccl_comm** out, sy_error* err);

/* One rank of a job over several machines: `device` is this rank's local CUDA device.
 * Collective, like sy_nccl_comm_create_local. */
sy_status sy_nccl_comm_create(const char* unique_id_hex, int32_t size, int32_t rank,
                              int32_t device, sy_nccl_comm** out, sy_error* err);

/* Releases the wrapper (and the NCCL communicator when it was created here). NULL is a no-op. */
void sy_nccl_comm_destroy(sy_nccl_comm* comm);

/* The sy_comm to hand to plugins. Owned by `comm`. NULL when `comm` is NULL. */
const sy_comm* sy_nccl_comm_get(const sy_nccl_comm* comm);

/* The underlying ncclComm_t (borrowed or owned, see above). NULL when `comm` is NULL. */
void* sy_nccl_comm_native(const sy_nccl_comm* comm);

/* Collectives issued through sy_nccl_comm_get(comm) so far, in total and by kind. */
int64_t sy_nccl_comm_collectives(const sy_nccl_comm* comm);
int64_t sy_nccl_comm_all_reduces(const sy_nccl_comm* comm);
int64_t sy_nccl_comm_all_gathers(const sy_nccl_comm* comm);
void sy_nccl_comm_reset_counts(sy_nccl_comm* comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SWITCHYARD_NCCL_H */
