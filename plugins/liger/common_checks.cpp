#include "common_checks.hpp"

#include <switchyard/plugin_helpers.hpp>

namespace switchyard::liger {

std::string str(int64_t value) { return std::to_string(value); }

void invalid(const std::string& message) { sy::fail(SY_ERR_INVALID_ARGUMENT, message); }

void require_cuda_problem_device(DLDevice device) {
  if (device.device_type == kDLCUDA && device.device_id >= 0) return;
  sy::fail(SY_ERR_UNSUPPORTED, "problem.device = " + sy::device_name(device) +
                                   ": liger runs on CUDA devices only (cuda:N); use native for "
                                   "CPU tensors");
}

void require_row_count(int64_t rows) {
  if (rows <= kMaxRows) return;
  sy::fail(SY_ERR_UNSUPPORTED, "problem.rows = " + str(rows) +
                                   " exceeds liger's limit of " + str(kMaxRows) +
                                   " rows per call (one block per row); split the batch");
}

void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required) {
  sy::require_workspace(workspace, workspace_bytes, required, "liger", kWorkspaceAlignment);
}

Dt to_dt(DLDataType dtype) {
  if (sy::same(dtype, sy::kBF16)) return Dt::BF16;
  if (sy::same(dtype, sy::kF16)) return Dt::F16;
  return Dt::F32;
}

int64_t stride_of(const DLTensor& tensor) {
  return tensor.ndim == 2 ? sy::row_stride(tensor) : 1;
}

const void* data_of(const DLTensor& tensor) { return sy::data_as<const char>(tensor); }
void* data_of(DLTensor& tensor) { return sy::data_as<char>(tensor); }

bool aligned16(const DLTensor& tensor) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(data_of(tensor));
  if (address % 16 != 0) return false;
  if (tensor.ndim != 2 || tensor.shape[0] <= 1) return true;
  const int64_t element = (tensor.dtype.bits * tensor.dtype.lanes + 7) / 8;
  return (stride_of(tensor) * element) % 16 == 0;
}

}  // namespace switchyard::liger
