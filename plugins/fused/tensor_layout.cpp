#include "tensor_layout.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <algorithm>
#include <limits>

namespace switchyard::fused {
namespace {

struct ByteSpan {
  intptr_t start = 0;     // first byte of row 0
  int64_t rows = 0;
  int64_t row_width = 0;  // bytes of one row's elements
  int64_t stride = 0;     // bytes from one row to the next
  bool empty() const { return rows == 0 || row_width == 0; }
  intptr_t end() const { return start + (rows - 1) * stride + row_width; }
};

ByteSpan span_of(const DLTensor& t) {
  ByteSpan s;
  const int64_t elem = (t.dtype.bits * t.dtype.lanes + 7) / 8;
  s.start = reinterpret_cast<intptr_t>(static_cast<const char*>(t.data) + t.byte_offset);
  if (t.ndim == 1) {
    s.rows = 1;
    s.row_width = t.shape[0] * elem;
    s.stride = s.row_width;
  } else {
    s.rows = t.shape[0];
    s.row_width = t.shape[1] * elem;
    s.stride = sy::row_stride(t) * elem;
  }
  return s;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

}  // namespace

Overlap overlap(const DLTensor& a, const DLTensor& b) {
  const ByteSpan x = span_of(a);
  const ByteSpan y = span_of(b);
  if (x.empty() || y.empty()) return Overlap::None;
  if (x.end() <= y.start || y.end() <= x.start) return Overlap::None;
  const bool same_rows = x.rows == y.rows && (x.rows == 1 || x.stride == y.stride);
  if (x.start == y.start && same_rows && x.row_width == y.row_width &&
      sy::same(a.dtype, b.dtype))
    return Overlap::Same;
  if (x.stride != y.stride || x.rows == 1 || y.rows == 1) return Overlap::Partial;
  // Equal row strides S: row i of x is [x0 + iS, x0 + iS + wx), row k of y is
  // [y0 + kS, y0 + kS + wy). They meet iff some m = k - i in [-(rows_x - 1), rows_y - 1]
  // has -wy < d + mS < wx with d = y0 - x0.
  const int64_t d = static_cast<int64_t>(y.start - x.start);
  const int64_t S = x.stride;
  const int64_t m_low = std::max(floor_div(-y.row_width - d, S) + 1, -(x.rows - 1));
  const int64_t m_high = std::min(ceil_div(x.row_width - d, S) - 1, y.rows - 1);
  return m_low <= m_high ? Overlap::Partial : Overlap::None;
}

void require_same_or_disjoint(const DLTensor* output, const char* output_name,
                              const DLTensor* input, const char* input_name) {
  if (output == nullptr || input == nullptr) return;
  if (overlap(*output, *input) != Overlap::Partial) return;
  std::string why;
  if (!sy::same(output->dtype, input->dtype))
    why = " (" + std::string(output_name) + " is " + sy::dtype_name(output->dtype) + ", " +
          input_name + " is " + sy::dtype_name(input->dtype) + ")";
  sy::fail(SY_ERR_INVALID_ARGUMENT,
           std::string(output_name) + " partly overlaps " + input_name + why +
               "; pass the very same tensor (same data, dtype and row stride) to work in "
               "place, or memory that does not overlap");
}

void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required) {
  if (workspace_bytes < required)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             "workspace_bytes = " + std::to_string(workspace_bytes) + " is too small: fused needs " +
                 std::to_string(required) +
                 " bytes for this problem; allocate workspace_size(problem) bytes");
  if (workspace == nullptr && required > 0)
    sy::fail(SY_ERR_INVALID_ARGUMENT, "workspace is NULL but fused needs " +
                                          std::to_string(required) +
                                          " bytes for this problem (workspace_size)");
}

void require_struct_size(std::size_t given, std::size_t required, const char* what) {
  if (given < required)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             std::string(what) + ".struct_size = " + std::to_string(given) +
                 " is smaller than the " + std::to_string(required) +
                 " bytes of its ABI v1.0 form; set struct_size = sizeof(the struct)");
}

int64_t checked_multiply(int64_t a, int64_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a)
    sy::fail(SY_ERR_INVALID_ARGUMENT,
             std::string(what) + " overflows: " + std::to_string(a) + " x " + std::to_string(b));
  return a * b;
}

}  // namespace switchyard::fused
