#include "dtype_codec.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <switchyard/float16.hpp>

namespace switchyard::conformance {

bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

bool is_float_dtype(DLDataType t) {
  return same_dtype(t, kF32) || same_dtype(t, kF16) || same_dtype(t, kBF16);
}

size_t element_bytes(DLDataType t) { return static_cast<size_t>(t.bits) / 8 * t.lanes; }

std::string short_dtype_name(DLDataType t) {
  if (same_dtype(t, kF32)) return "f32";
  if (same_dtype(t, kF16)) return "f16";
  if (same_dtype(t, kBF16)) return "bf16";
  if (same_dtype(t, kI64)) return "i64";
  if (same_dtype(t, kI32)) return "i32";
  if (same_dtype(t, kU8)) return "u8";
  return "code" + std::to_string(t.code) + "x" + std::to_string(t.bits);
}

double load_float(const unsigned char* element, DLDataType t) {
  if (same_dtype(t, kF32)) {
    float f;
    std::memcpy(&f, element, sizeof f);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, element, sizeof h);
  if (same_dtype(t, kBF16)) return sy::bf16_to_float(h);
  if (same_dtype(t, kF16)) return sy::f16_to_float(h);
  throw std::logic_error("load_float: not a float dtype: " + short_dtype_name(t));
}

void store_float(unsigned char* element, DLDataType t, double value) {
  const float f = static_cast<float>(value);
  if (same_dtype(t, kF32)) {
    std::memcpy(element, &f, sizeof f);
    return;
  }
  uint16_t h;
  if (same_dtype(t, kBF16))
    h = sy::float_to_bf16(f);
  else if (same_dtype(t, kF16))
    h = sy::float_to_f16(f);
  else
    throw std::logic_error("store_float: not a float dtype: " + short_dtype_name(t));
  std::memcpy(element, &h, sizeof h);
}

int64_t load_int(const unsigned char* element, DLDataType t) {
  if (same_dtype(t, kI64)) {
    int64_t v;
    std::memcpy(&v, element, sizeof v);
    return v;
  }
  if (same_dtype(t, kI32)) {
    int32_t v;
    std::memcpy(&v, element, sizeof v);
    return v;
  }
  throw std::logic_error("load_int: not an int dtype: " + short_dtype_name(t));
}

void store_int(unsigned char* element, DLDataType t, int64_t value) {
  if (same_dtype(t, kI64)) {
    std::memcpy(element, &value, sizeof value);
  } else if (same_dtype(t, kI32)) {
    const int32_t v = static_cast<int32_t>(value);
    std::memcpy(element, &v, sizeof v);
  } else {
    throw std::logic_error("store_int: not an int dtype: " + short_dtype_name(t));
  }
}

void store_poison(unsigned char* element, DLDataType t) {
  if (is_float_dtype(t))
    store_float(element, t, std::numeric_limits<double>::quiet_NaN());
  else if (same_dtype(t, kI64) || same_dtype(t, kI32))
    store_int(element, t, kArgmaxPoison);
  else
    std::memset(element, 0xff, element_bytes(t));
}

}  // namespace switchyard::conformance
