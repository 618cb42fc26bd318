// Whether two DLPack tensors share memory, decided exactly: two strided tensors whose rows
// interleave without sharing a byte do not overlap. Header-only, for plugin authors; the
// tensors must be 1-D or 2-D and have passed sy::check_tensor (unit-stride elements, rows that
// do not overlap each other).
//
// In-place rules of the ABI: an output may be the very same tensor as an input (same first
// element, dtype, rows and row stride) or memory that does not overlap it; a partial overlap
// is refused. Two outputs never share memory.
#ifndef SWITCHYARD_TENSOR_LAYOUT_HPP
#define SWITCHYARD_TENSOR_LAYOUT_HPP

#include <switchyard/plugin_helpers.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

namespace sy {

enum class Overlap {
  None,     // no byte in common
  Same,     // exactly the same elements with the same dtype and layout: a valid in-place pair
  Partial,  // some bytes in common otherwise
};

inline int64_t element_bytes(const DLTensor& t) { return (t.dtype.bits * t.dtype.lanes + 7) / 8; }

namespace layout_detail {

// The bytes a tensor's elements occupy, row by row.
struct ByteRows {
  intptr_t start = 0;     // first byte of row 0
  int64_t rows = 0;
  int64_t row_width = 0;  // bytes of one row's elements
  int64_t stride = 0;     // bytes from one row to the next
  bool empty() const { return rows == 0 || row_width == 0; }
  intptr_t end() const { return start + (rows - 1) * stride + row_width; }
};

inline ByteRows byte_rows(const DLTensor& t) {
  ByteRows s;
  const int64_t element = element_bytes(t);
  s.start = reinterpret_cast<intptr_t>(static_cast<const char*>(t.data) + t.byte_offset);
  if (t.ndim == 1) {
    s.rows = 1;
    s.row_width = t.shape[0] * element;
    s.stride = s.row_width;
  } else {
    s.rows = t.shape[0];
    s.row_width = t.shape[1] * element;
    s.stride = row_stride(t) * element;
  }
  return s;
}

inline int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

}  // namespace layout_detail

inline Overlap overlap(const DLTensor& a, const DLTensor& b) {
  using layout_detail::ByteRows;
  const ByteRows x = layout_detail::byte_rows(a);
  const ByteRows y = layout_detail::byte_rows(b);
  if (x.empty() || y.empty()) return Overlap::None;
  if (x.end() <= y.start || y.end() <= x.start) return Overlap::None;
  const bool same_rows = x.rows == y.rows && (x.rows == 1 || x.stride == y.stride);
  if (x.start == y.start && same_rows && x.row_width == y.row_width && same(a.dtype, b.dtype))
    return Overlap::Same;
  if (x.stride != y.stride || x.rows == 1 || y.rows == 1) return Overlap::Partial;
  // Equal row strides S: row i of x is [x0 + iS, x0 + iS + wx), row k of y is
  // [y0 + kS, y0 + kS + wy). They meet iff some m = k - i in [-(rows_x - 1), rows_y - 1]
  // has -wy < d + mS < wx with d = y0 - x0.
  const int64_t d = static_cast<int64_t>(y.start - x.start);
  const int64_t S = x.stride;
  const int64_t m_low =
      std::max(layout_detail::floor_div(-y.row_width - d, S) + 1, -(x.rows - 1));
  const int64_t m_high = std::min(layout_detail::ceil_div(x.row_width - d, S) - 1, y.rows - 1);
  return m_low <= m_high ? Overlap::Partial : Overlap::None;
}

// Throws SY_ERR_INVALID_ARGUMENT when `output` partly overlaps `input`; exact aliasing is
// allowed (in place). Either may be NULL.
inline void require_same_or_disjoint(const DLTensor* output, const char* output_name,
                                     const DLTensor* input, const char* input_name) {
  if (output == nullptr || input == nullptr) return;
  if (overlap(*output, *input) != Overlap::Partial) return;
  std::string why;
  if (!same(output->dtype, input->dtype))
    why = " (" + std::string(output_name) + " is " + dtype_name(output->dtype) + ", " +
          input_name + " is " + dtype_name(input->dtype) + ")";
  fail(SY_ERR_INVALID_ARGUMENT,
       std::string(output_name) + " partly overlaps " + input_name + why +
           "; pass the very same tensor (same data, dtype and row stride) to work in place, or "
           "memory that does not overlap");
}

// Throws SY_ERR_INVALID_ARGUMENT when two outputs share any memory. Either may be NULL.
inline void require_disjoint(const DLTensor* a, const char* a_name, const DLTensor* b,
                             const char* b_name) {
  if (a == nullptr || b == nullptr) return;
  if (overlap(*a, *b) != Overlap::None)
    fail(SY_ERR_INVALID_ARGUMENT, std::string(a_name) + " overlaps " + b_name +
                                      "; both are outputs and each needs its own memory");
}

}  // namespace sy

#endif  // SWITCHYARD_TENSOR_LAYOUT_HPP
