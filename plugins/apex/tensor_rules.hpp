// Where a checked DLTensor's elements are, whether a tensor allows 16-byte accesses, and the
// SDK's rules for tensors that share memory (<switchyard/tensor_layout.hpp>).
#ifndef SWITCHYARD_APEX_TENSOR_RULES_HPP
#define SWITCHYARD_APEX_TENSOR_RULES_HPP

#include <dlpack/dlpack.h>
#include <switchyard/tensor_layout.hpp>

#include <cstdint>

namespace switchyard::apex {

// data + byte_offset.
const void* address_of(const DLTensor& tensor);
void* address_of(DLTensor& tensor);

// Row stride in elements of a 2-D tensor (compact when strides is NULL).
int64_t row_stride_of(const DLTensor& tensor);

// Every row (or the vector) starts at a 16-byte boundary. NULL tensors pass.
bool allows_16_byte_access(const DLTensor* tensor);

// SY_ERR_INVALID_ARGUMENT when `output` partly overlaps `input` (the very same tensor is in
// place), and when two outputs share any memory. Either may be NULL.
using sy::require_disjoint;
using sy::require_same_or_disjoint;

}  // namespace switchyard::apex

#endif
