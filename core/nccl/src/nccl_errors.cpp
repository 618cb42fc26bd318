// NCCL and CUDA error text.
#include "nccl_errors.hpp"

namespace switchyard::nccl_detail {

std::string nccl_failure(const std::string& what, ncclResult_t result, ncclComm_t comm) {
  std::string message = what + " failed: " + ncclGetErrorString(result) + " (ncclResult_t " +
                        std::to_string(static_cast<int>(result)) + ")";
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && *detail != '\0') message += ": " + std::string(detail);
  return message + ".";
}

std::string cuda_failure(const std::string& what, cudaError_t result) {
  cudaGetLastError();  // a non-sticky error must not resurface in the caller's next check
  return what + " failed: " + cudaGetErrorString(result) + " (cudaError_t " +
         std::to_string(static_cast<int>(result)) + ").";
}

}  // namespace switchyard::nccl_detail
