#include "row_claims.hpp"

#include "cuda_support.hpp"
#include "te_device.cuh"

namespace switchyard::te {
namespace {

__global__ void zero_row_claims_kernel(unsigned long long* claims) {
  *claims = 0;
  allow_dependent_launch();
}

}  // namespace

void launch_zero_row_claims(unsigned long long* claims, void* stream) {
  zero_row_claims_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(claims);
  check_cuda(cudaGetLastError(), "launch of zero_row_claims_kernel");
}

}  // namespace switchyard::te
