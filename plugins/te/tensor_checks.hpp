// Checks of tensor descriptors that need no tensor data: struct sizes, aliasing, alignment,
// workspace. Each throws sy::Failure(SY_ERR_INVALID_ARGUMENT) with a sentence naming the
// argument, what it is and what is expected. (Presence, device, dtype, shape and strides are
// sy::check_tensor's, from the SDK.)
#ifndef SWITCHYARD_TE_TENSOR_CHECKS_HPP
#define SWITCHYARD_TE_TENSOR_CHECKS_HPP

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace switchyard::te {

// A caller-filled struct older than the ABI v1.0 form te reads.
void require_struct_size(std::size_t given, std::size_t required, const char* what);

// The first element's address (data + byte_offset).
const char* first_byte(const DLTensor& t);
int64_t element_size(const DLTensor& t);

// Row stride in elements (2-D), the compact one when strides is NULL.
int64_t row_stride_elements(const DLTensor& t);

// The tensor's first element must be aligned to its element size (the kernels load elements
// with their natural alignment). NULL tensors are not checked.
void require_element_aligned(const DLTensor* t, const char* name);

// `output` may be exactly `input` (same first byte, dtype, shape and row stride: in place) or
// lie wholly outside the bytes [first, last] that `input` spans; anything else is refused.
// (Conservative: two tensors whose rows interleave without sharing a byte are refused too.)
void require_same_or_disjoint(const DLTensor* output, const char* output_name,
                              const DLTensor* input, const char* input_name);
// Both outputs: they must not share any byte range.
void require_disjoint(const DLTensor* a, const char* a_name, const DLTensor* b,
                      const char* b_name);
bool same_tensor(const DLTensor& a, const DLTensor& b);

// The workspace must cover `required` bytes, be non-NULL when required > 0 and 16-byte aligned.
void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required);

// True when every row of t starts on a multiple of `alignment` bytes (base and row stride).
bool rows_aligned(const DLTensor& t, int64_t alignment);

std::string hex(uint32_t v);
std::string real(float v);  // "%g"

}  // namespace switchyard::te

#endif
