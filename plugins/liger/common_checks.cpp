#include "common_checks.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cstdio>

namespace switchyard::liger {

std::string str(int64_t value) { return std::to_string(value); }

std::string real(float value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(value));
  return buffer;
}

std::string hex(uint32_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%x", value);
  return buffer;
}

void invalid(const std::string& message) { sy::fail(SY_ERR_INVALID_ARGUMENT, message); }

void require_cuda_problem_device(DLDevice device) {
  if (device.device_type == kDLCUDA && device.device_id >= 0) return;
  sy::fail(SY_ERR_UNSUPPORTED, "problem.device = " + sy::device_name(device) +
                                   ": liger runs on CUDA devices only (cuda:N); use native for "
                                   "CPU tensors");
}

void require_data_dtype(DLDataType dtype, const char* field) {
  if (sy::dtype_bit(dtype) != 0) return;
  sy::fail(SY_ERR_UNSUPPORTED, std::string("problem.") + field + " = " + sy::dtype_name(dtype) +
                                   " is not supported by liger; supported: float32, bfloat16, "
                                   "float16");
}

void require_row_count(int64_t rows) {
  if (rows <= kMaxRows) return;
  sy::fail(SY_ERR_UNSUPPORTED, "problem.rows = " + str(rows) +
                                   " exceeds liger's limit of " + str(kMaxRows) +
                                   " rows per call (one block per row); split the batch");
}

void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required) {
  if (required <= 0) return;
  if (workspace_bytes < required)
    invalid("workspace_bytes = " + str(workspace_bytes) + " is too small: liger needs " +
            str(required) + " bytes for this problem; allocate workspace_size(problem) bytes");
  if (workspace == nullptr)
    invalid("workspace is NULL but liger needs " + str(required) +
            " bytes of device memory for this problem (workspace_size)");
  if (reinterpret_cast<uintptr_t>(workspace) % 16 != 0)
    invalid("workspace is not 16-byte aligned; pass the start of a cudaMalloc'd buffer (or an "
            "offset that is a multiple of 16)");
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
