// Checks and small conversions shared by liger's cross-entropy and norm validation. The ABI's
// rules, overlap detection and the workspace check come from the SDK
// (<switchyard/ce_checks.hpp>, <switchyard/norm_checks.hpp>, <switchyard/tensor_layout.hpp>).
#ifndef SWITCHYARD_LIGER_COMMON_CHECKS_HPP
#define SWITCHYARD_LIGER_COMMON_CHECKS_HPP

#include "kernels/launch.hpp"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

namespace switchyard::liger {

// The kernels index a block per row with a 32-bit grid.
constexpr int64_t kMaxRows = 2147483647;
// The workspace's alignment: the kernels access it 16 bytes at a time.
constexpr int64_t kWorkspaceAlignment = 16;

std::string str(int64_t value);
[[noreturn]] void invalid(const std::string& message);

// UNSUPPORTED unless `device` is a CUDA device (problem.device).
void require_cuda_problem_device(DLDevice device);
// UNSUPPORTED for more rows than one grid dimension holds.
void require_row_count(int64_t rows);
// INVALID_ARGUMENT unless the workspace covers `required` bytes, is set and 16-byte aligned.
void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required);

// The kernel dtype of a data dtype that passed require_data_dtype.
Dt to_dt(DLDataType dtype);
// 16-byte accesses are legal: data 16-byte aligned and (2-D) a row stride of 16-byte multiples.
bool aligned16(const DLTensor& tensor);
// The row stride of a 2-D tensor in elements (compact when strides is NULL).
int64_t stride_of(const DLTensor& tensor);
const void* data_of(const DLTensor& tensor);
void* data_of(DLTensor& tensor);

}  // namespace switchyard::liger

#endif
