// Turning NCCL and CUDA results into the sentences Switchyard reports.
#ifndef SWITCHYARD_NCCL_ERRORS_HPP
#define SWITCHYARD_NCCL_ERRORS_HPP

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace switchyard::nccl_detail {

// "<what> failed: <ncclGetErrorString> (ncclResult_t N): <ncclGetLastError>", the last part
// only when NCCL recorded one.
std::string nccl_failure(const std::string& what, ncclResult_t result, ncclComm_t comm);

// "<what> failed: <cudaGetErrorString> (cudaError_t N)"; also clears CUDA's last error.
std::string cuda_failure(const std::string& what, cudaError_t result);

// NCCL reports a collective or an initialisation as started but not finished (non-blocking
// communicators) with ncclInProgress; for a stream-ordered call that is success.
inline bool nccl_succeeded(ncclResult_t result) {
  return result == ncclSuccess || result == ncclInProgress;
}

}  // namespace switchyard::nccl_detail

#endif
