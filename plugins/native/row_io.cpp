#include "row_io.hpp"

#include <switchyard/float16.hpp>
#include <switchyard/plugin_helpers.hpp>

#include <cmath>
#include <cstring>

namespace switchyard::native {

bool to_data_type(DLDataType dtype, DataType* out) {
  if (sy::same(dtype, sy::kF32)) *out = DataType::F32;
  else if (sy::same(dtype, sy::kBF16)) *out = DataType::BF16;
  else if (sy::same(dtype, sy::kF16)) *out = DataType::F16;
  else return false;
  return true;
}

DataType data_type(DLDataType dtype) {
  DataType type;
  if (!to_data_type(dtype, &type))
    sy::fail(SY_ERR_INTERNAL, "native: unexpected dtype " + sy::dtype_name(dtype) +
                                  " after validation (a bug in the native plugin)");
  return type;
}

int64_t element_bytes(DataType type) { return type == DataType::F32 ? 4 : 2; }

float round_to_odd(double value) {
  const float nearest = static_cast<float>(value);
  if (!std::isfinite(value) || static_cast<double>(nearest) == value) return nearest;
  // Truncate toward zero, then make the last bit odd (the sticky bit of the lost digits).
  float truncated = nearest;
  if (std::fabs(static_cast<double>(nearest)) > std::fabs(value))
    truncated = std::nextafter(nearest, 0.0f);
  uint32_t bits = sy::float_to_bits(truncated);
  if ((bits & 1u) == 0) bits += 1;  // one step away from zero in sign-magnitude
  return sy::bits_to_float(bits);
}

namespace {
template <class Dst>
void load_row_as(DataType type, const void* src, int64_t count, Dst* dst) {
  switch (type) {
    case DataType::F32: {
      const float* s = static_cast<const float*>(src);
      for (int64_t j = 0; j < count; ++j) dst[j] = static_cast<Dst>(s[j]);
      break;
    }
    case DataType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t j = 0; j < count; ++j) dst[j] = static_cast<Dst>(sy::bf16_to_float(s[j]));
      break;
    }
    case DataType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t j = 0; j < count; ++j) dst[j] = static_cast<Dst>(sy::f16_to_float(s[j]));
      break;
    }
  }
}
}  // namespace

void load_row(DataType type, const void* src, int64_t count, float* dst) {
  load_row_as(type, src, count, dst);
}
void load_row(DataType type, const void* src, int64_t count, double* dst) {
  load_row_as(type, src, count, dst);
}

void store_row(DataType type, void* dst, int64_t count, const double* src) {
  switch (type) {
    case DataType::F32: {
      float* d = static_cast<float*>(dst);
      for (int64_t j = 0; j < count; ++j) d[j] = static_cast<float>(src[j]);
      break;
    }
    case DataType::BF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t j = 0; j < count; ++j) d[j] = sy::float_to_bf16(round_to_odd(src[j]));
      break;
    }
    case DataType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t j = 0; j < count; ++j) d[j] = sy::float_to_f16(round_to_odd(src[j]));
      break;
    }
  }
}

int64_t load_label(DLDataType dtype, const void* base, int64_t index) {
  if (dtype.bits == 32) return static_cast<const int32_t*>(base)[index];
  return static_cast<const int64_t*>(base)[index];
}

RowView::RowView(const DLTensor& tensor)
    : base(sy::data_as<char>(tensor)),
      element_bytes((tensor.dtype.bits * tensor.dtype.lanes + 7) / 8) {
  row_bytes = (tensor.ndim == 2 ? sy::row_stride(tensor) : 1) * element_bytes;
}

}  // namespace switchyard::native
