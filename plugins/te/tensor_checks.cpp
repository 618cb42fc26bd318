#include "tensor_checks.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cstdio>

namespace switchyard::te {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  sy::fail(SY_ERR_INVALID_ARGUMENT, message);
}

// [first, last] byte range of a 1-D or 2-D tensor; empty when it has no elements.
struct Span {
  uintptr_t first = 0;
  uintptr_t last = 0;
  bool empty = true;
};

Span span_of(const DLTensor& t) {
  Span s;
  const int64_t rows = t.ndim == 2 ? t.shape[0] : 1;
  const int64_t cols = t.ndim == 2 ? t.shape[1] : t.shape[0];
  if (rows <= 0 || cols <= 0) return s;
  const int64_t esize = element_size(t);
  const int64_t stride = t.ndim == 2 ? row_stride_elements(t) : cols;
  s.first = reinterpret_cast<uintptr_t>(first_byte(t));
  s.last = s.first + static_cast<uintptr_t>(((rows - 1) * stride + cols) * esize - 1);
  s.empty = false;
  return s;
}

bool spans_meet(const Span& a, const Span& b) {
  return !a.empty && !b.empty && a.first <= b.last && b.first <= a.last;
}

}  // namespace

void require_struct_size(std::size_t given, std::size_t required, const char* what) {
  if (given < required)
    invalid(std::string(what) + ".struct_size = " + std::to_string(given) +
            " is smaller than the " + std::to_string(required) +
            " bytes of its ABI v1.0 form; set struct_size = sizeof(the struct)");
}

const char* first_byte(const DLTensor& t) {
  return static_cast<const char*>(t.data) + t.byte_offset;
}

int64_t element_size(const DLTensor& t) { return (t.dtype.bits * t.dtype.lanes + 7) / 8; }

int64_t row_stride_elements(const DLTensor& t) { return sy::row_stride(t); }

void require_element_aligned(const DLTensor* t, const char* name) {
  if (t == nullptr) return;
  const int64_t esize = element_size(*t);
  const auto address = reinterpret_cast<uintptr_t>(first_byte(*t));
  if (esize > 0 && address % static_cast<uintptr_t>(esize) != 0) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
    invalid(std::string(name) + " starts at " + text + " (data + byte_offset), which is not a "
            "multiple of its " + std::to_string(esize) + "-byte elements; pass an aligned tensor");
  }
}

bool same_tensor(const DLTensor& a, const DLTensor& b) {
  if (first_byte(a) != first_byte(b) || !sy::same(a.dtype, b.dtype) || a.ndim != b.ndim)
    return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return a.ndim != 2 || a.shape[0] <= 1 || row_stride_elements(a) == row_stride_elements(b);
}

void require_same_or_disjoint(const DLTensor* output, const char* output_name,
                              const DLTensor* input, const char* input_name) {
  if (output == nullptr || input == nullptr) return;
  if (same_tensor(*output, *input)) return;
  if (!spans_meet(span_of(*output), span_of(*input))) return;
  std::string why;
  if (!sy::same(output->dtype, input->dtype))
    why = " (" + std::string(output_name) + " is " + sy::dtype_name(output->dtype) + ", " +
          input_name + " is " + sy::dtype_name(input->dtype) + ")";
  invalid(std::string(output_name) + " overlaps " + input_name + " without being the same tensor" +
          why + "; pass the very same tensor (same data, dtype and row stride) to work in place, "
          "or memory that does not overlap");
}

void require_disjoint(const DLTensor* a, const char* a_name, const DLTensor* b,
                      const char* b_name) {
  if (a == nullptr || b == nullptr) return;
  if (spans_meet(span_of(*a), span_of(*b)))
    invalid(std::string(a_name) + " overlaps " + b_name +
            "; both are outputs and each needs its own memory");
}

void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required) {
  if (workspace_bytes < required)
    invalid("workspace_bytes = " + std::to_string(workspace_bytes) + " is too small: te needs " +
            std::to_string(required) +
            " bytes for this problem; allocate workspace_size(problem) bytes");
  if (required > 0 && workspace == nullptr)
    invalid("workspace is NULL but te needs " + std::to_string(required) +
            " bytes for this problem (workspace_size)");
  if (required > 0 && reinterpret_cast<uintptr_t>(workspace) % 16 != 0)
    invalid("workspace is not 16-byte aligned; pass memory from the device allocator "
            "(cudaMalloc returns 256-byte aligned memory)");
}

bool rows_aligned(const DLTensor& t, int64_t alignment) {
  const auto address = reinterpret_cast<uintptr_t>(first_byte(t));
  if (address % static_cast<uintptr_t>(alignment) != 0) return false;
  if (t.ndim != 2 || t.shape[0] <= 1) return true;
  return (row_stride_elements(t) * element_size(t)) % alignment == 0;
}

std::string hex(uint32_t v) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%x", v);
  return buffer;
}

std::string real(float v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(v));
  return buffer;
}

}  // namespace switchyard::te
