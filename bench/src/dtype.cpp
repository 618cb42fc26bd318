#include "dtype.hpp"

#include "bench_error.hpp"

#include <switchyard/float16.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace switchyard::bench {
namespace {

bool same(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

}  // namespace

std::string dtype_label(DLDataType t) {
  if (same(t, kBF16)) return "bfloat16";
  if (same(t, kF16)) return "float16";
  if (same(t, kF32)) return "float32";
  if (same(t, kI64)) return "int64";
  return "dtype(code " + std::to_string(t.code) + ", bits " + std::to_string(t.bits) + ")";
}

DLDataType parse_data_dtype(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "bf16" || lower == "bfloat16") return kBF16;
  if (lower == "f16" || lower == "fp16" || lower == "float16" || lower == "half") return kF16;
  if (lower == "f32" || lower == "fp32" || lower == "float32" || lower == "float") return kF32;
  throw BenchError("--dtype '" + text + "' is not a data dtype; expected bf16, f16 or f32");
}

float decode_element(DLDataType t, const void* element) {
  if (t.bits == 32) {
    float v;
    std::memcpy(&v, element, sizeof v);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, element, sizeof h);
  return t.code == kDLBfloat ? sy::bf16_to_float(h) : sy::f16_to_float(h);
}

void encode_element(DLDataType t, float value, void* element) {
  if (t.bits == 32) {
    std::memcpy(element, &value, sizeof value);
    return;
  }
  const uint16_t h = t.code == kDLBfloat ? sy::float_to_bf16(value) : sy::float_to_f16(value);
  std::memcpy(element, &h, sizeof h);
}

}  // namespace switchyard::bench
