/* switchyard/nccl.h must compile as C99 and its functions link from C. */
#include <switchyard/nccl.h>

#include <string.h>

/* Called from test_nccl_cpu.cpp: wraps NULL through the C API, returns the status and copies
 * the message. */
sy_status nccl_c_wrap_null(char* message, size_t capacity) {
  sy_error err;
  sy_nccl_comm* comm = NULL;
  sy_status status;
  memset(&err, 0, sizeof err);
  err.struct_size = sizeof err;
  status = sy_nccl_comm_wrap(NULL, -1, &comm, &err);
  strncpy(message, err.message, capacity - 1);
  message[capacity - 1] = '\0';
  sy_nccl_comm_destroy(comm);
  return status;
}
