// The data types the generated kernels are specialised on. The numeric values are what the
// generated source sees as its dtype constants (0 float32, 1 bfloat16, 2 float16).
#ifndef SWITCHYARD_FUSED_JIT_DTYPE_HPP
#define SWITCHYARD_FUSED_JIT_DTYPE_HPP

#include <dlpack/dlpack.h>

#include <optional>

namespace switchyard::fused::jit {

enum class DType : int { F32 = 0, BF16 = 1, F16 = 2 };

inline int bytes_of(DType t) { return t == DType::F32 ? 4 : 2; }

inline const char* dtype_short_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
  }
  return "?";
}

inline std::optional<DType> dtype_of(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  if (t.code == kDLFloat && t.bits == 32) return DType::F32;
  if (t.code == kDLBfloat && t.bits == 16) return DType::BF16;
  if (t.code == kDLFloat && t.bits == 16) return DType::F16;
  return std::nullopt;
}

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_DTYPE_HPP
