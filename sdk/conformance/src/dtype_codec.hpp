// Reading and writing tensor elements of the dtypes the ABI uses, as double / int64.
#ifndef SWITCHYARD_CONFORMANCE_DTYPE_CODEC_HPP
#define SWITCHYARD_CONFORMANCE_DTYPE_CODEC_HPP

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace switchyard::conformance {

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};
constexpr DLDataType kBF16{kDLBfloat, 16, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};

// The argmax poison: not a vocabulary id, so an unwritten argmax cannot pass.
constexpr int64_t kArgmaxPoison = INT64_MIN + 0x5a5a;

bool same_dtype(DLDataType a, DLDataType b);
bool is_float_dtype(DLDataType t);  // f32, bf16, f16
size_t element_bytes(DLDataType t);
// "f32", "bf16", "f16", "i64", "i32", "u8"
std::string short_dtype_name(DLDataType t);

double load_float(const unsigned char* element, DLDataType t);
void store_float(unsigned char* element, DLDataType t, double value);  // rounds to nearest even
int64_t load_int(const unsigned char* element, DLDataType t);
void store_int(unsigned char* element, DLDataType t, int64_t value);
// Writes the poison of dtype t: a quiet NaN for floats, kArgmaxPoison (truncated) for ints,
// 0xFF for bytes.
void store_poison(unsigned char* element, DLDataType t);

}  // namespace switchyard::conformance

#endif
