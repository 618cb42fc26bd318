// Data dtypes of the benchmark: names, sizes, and host-side encode/decode of one element.
#ifndef SWITCHYARD_BENCH_DTYPE_HPP
#define SWITCHYARD_BENCH_DTYPE_HPP

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

namespace switchyard::bench {

constexpr DLDataType kBF16{kDLBfloat, 16, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

inline int64_t dtype_bytes(DLDataType t) { return (int64_t{t.bits} * t.lanes + 7) / 8; }

// "bfloat16", "float16", "float32" (the names PyTorch prints, used in the JSON).
std::string dtype_label(DLDataType t);

// Accepts bf16|bfloat16, f16|fp16|float16|half, f32|fp32|float32|float. Throws BenchError.
DLDataType parse_data_dtype(const std::string& text);

// One element of a data dtype (bf16, f16, f32) to and from float, round to nearest even.
float decode_element(DLDataType t, const void* element);
void encode_element(DLDataType t, float value, void* element);

}  // namespace switchyard::bench

#endif
