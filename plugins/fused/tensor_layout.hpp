// Whether two validated DLTensors share memory (exactly the same elements, partly, or not at
// all), and the small argument checks every entry point shares. (The native plugin's rules,
// with fused in the messages.)
#ifndef SWITCHYARD_FUSED_TENSOR_LAYOUT_HPP
#define SWITCHYARD_FUSED_TENSOR_LAYOUT_HPP

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

namespace switchyard::fused {

enum class Overlap { None, Same, Partial };

// Same: both tensors address exactly the same elements with the same dtype and layout (a
// valid in-place pair). Partial: some bytes are shared otherwise. Both must be 1-D or 2-D
// tensors that passed sy::check_tensor.
Overlap overlap(const DLTensor& a, const DLTensor& b);

// Throws SY_ERR_INVALID_ARGUMENT when `output` partly overlaps `input`; exact aliasing is
// allowed (in place). Either may be NULL.
void require_same_or_disjoint(const DLTensor* output, const char* output_name,
                              const DLTensor* input, const char* input_name);

// Throws SY_ERR_INVALID_ARGUMENT unless `workspace_bytes` covers `required` and the pointer
// is set.
void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required);

// Throws SY_ERR_INVALID_ARGUMENT when a caller-filled struct is older than the ABI v1.0 form
// this plugin reads.
void require_struct_size(std::size_t given, std::size_t required, const char* what);

// a * b, or SY_ERR_INVALID_ARGUMENT naming `what` when it does not fit an int64.
int64_t checked_multiply(int64_t a, int64_t b, const char* what);
inline int64_t align_up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace switchyard::fused

#endif
