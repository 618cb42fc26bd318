// Reading and writing rows of float32 / bfloat16 / float16 data on the CPU.
//
// Stores round exactly once from double to the destination dtype: bfloat16 and float16 go
// through float by round-to-odd first, which makes the two-step conversion equal to a single
// correct rounding (float keeps more than twice the bits of either half type plus two).
#ifndef SWITCHYARD_NATIVE_ROW_IO_HPP
#define SWITCHYARD_NATIVE_ROW_IO_HPP

#include <dlpack/dlpack.h>

#include <cstdint>

namespace switchyard::native {

enum class DataType { F32, BF16, F16 };

// The DataType of a float32/bfloat16/float16 DLDataType; false for anything else.
bool to_data_type(DLDataType dtype, DataType* out);
// As above, but throws sy::Failure(SY_ERR_INTERNAL) for anything else: for dtypes that
// validation already accepted.
DataType data_type(DLDataType dtype);
int64_t element_bytes(DataType type);

// The float nearest to `value` with round-to-odd: exact values stay; inexact ones take the
// neighbour whose last mantissa bit is 1.
float round_to_odd(double value);

void load_row(DataType type, const void* src, int64_t count, float* dst);
void load_row(DataType type, const void* src, int64_t count, double* dst);
// Rounds each value once to `type`.
void store_row(DataType type, void* dst, int64_t count, const double* src);

// Integer labels (int32 or int64) as int64.
int64_t load_label(DLDataType dtype, const void* base, int64_t index);

// Row i of a 1-D or 2-D tensor that passed sy::check_tensor.
struct RowView {
  char* base = nullptr;       // element [0, 0]
  int64_t row_bytes = 0;      // distance between rows, in bytes
  int64_t element_bytes = 0;

  explicit RowView(const DLTensor& tensor);
  RowView() = default;
  char* row(int64_t i) const { return base + i * row_bytes; }
};

}  // namespace switchyard::native

#endif
