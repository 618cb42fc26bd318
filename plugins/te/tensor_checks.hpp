// Checks of tensor descriptors that need no tensor data: alignment, aliasing, workspace, and
// the addressing helpers the launch code shares. Each check throws
// sy::Failure(SY_ERR_INVALID_ARGUMENT) with a sentence naming the argument, what it is and what
// is expected. (The ABI's rules for presence, device, dtype, shape and strides are the SDK's:
// <switchyard/ce_checks.hpp>, <switchyard/norm_checks.hpp>; overlap is decided by
// <switchyard/tensor_layout.hpp>.)
#ifndef SWITCHYARD_TE_TENSOR_CHECKS_HPP
#define SWITCHYARD_TE_TENSOR_CHECKS_HPP

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace switchyard::te {

// The first element's address (data + byte_offset).
const char* first_byte(const DLTensor& t);
int64_t element_size(const DLTensor& t);

// Row stride in elements (2-D), the compact one when strides is NULL.
int64_t row_stride_elements(const DLTensor& t);

// The tensor's first element must be aligned to its element size (the kernels load elements
// with their natural alignment). NULL tensors are not checked.
void require_element_aligned(const DLTensor* t, const char* name);

// `output` may be exactly `input` (same first byte, dtype, rows and row stride: in place) or
// share no byte with it (sy::overlap); a partial overlap is refused. Either may be NULL.
void require_same_or_disjoint(const DLTensor* output, const char* output_name,
                              const DLTensor* input, const char* input_name);

// The workspace must cover `required` bytes, be non-NULL when required > 0 and 16-byte aligned.
void require_workspace(const void* workspace, int64_t workspace_bytes, int64_t required);

// True when every row of t starts on a multiple of `alignment` bytes (base and row stride).
bool rows_aligned(const DLTensor& t, int64_t alignment);

}  // namespace switchyard::te

#endif
