#include "tensor_checks.hpp"

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/tensor_layout.hpp>

#include <cstdio>

namespace switchyard::te {

const char* first_byte(const DLTensor& t) {
  return static_cast<const char*>(t.data) + t.byte_offset;
}

int64_t element_size(const DLTensor& t) { return sy::element_bytes(t); }

int64_t row_stride_elements(const DLTensor& t) { return sy::row_stride(t); }

void require_element_aligned(const DLTensor* t, const char* name) {
  if (t == nullptr) return;
  const int64_t esize = element_size(*t);
  const auto address = reinterpret_cast<uintptr_t>(first_byte(*t));
  if (esize > 0 && address % static_cast<uintptr_t>(esize) != 0) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
    sy::invalid_argument(std::string(name) + " starts at " + text +
                         " (data + byte_offset), which is not a multiple of its " +
                         std::to_string(esize) + "-byte elements; pass an aligned tensor");
  }
}

// sy::require_same_or_disjoint's rule, in te's words.
void require_same_or_disjoint(const DLTensor* output, const char* output_name,
                              const DLTensor* input, const char* input_name) {
  if (output == nullptr || input == nullptr) return;
  if (sy::overlap(*output, *input) != sy::Overlap::Partial) return;
  std::string why;
  if (!sy::same(output->dtype, input->dtype))
    why = " (" + std::string(output_name) + " is " + sy::dtype_name(output->dtype) + ", " +
          input_name + " is " + sy::dtype_name(input->dtype) + ")";
  sy::invalid_argument(std::string(output_name) + " overlaps " + input_name +
                       " without being the same tensor" + why +
                       "; pass the very same tensor (same data, dtype and row stride) to work "
                       "in place, or memory that does not overlap");
}

void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required) {
  sy::require_workspace(workspace, workspace_bytes, required, "te", 16);
}

bool rows_aligned(const DLTensor& t, int64_t alignment) {
  const auto address = reinterpret_cast<uintptr_t>(first_byte(t));
  if (address % static_cast<uintptr_t>(alignment) != 0) return false;
  if (t.ndim != 2 || t.shape[0] <= 1) return true;
  return (row_stride_elements(t) * element_size(t)) % alignment == 0;
}

}  // namespace switchyard::te
