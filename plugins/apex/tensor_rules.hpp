// Where a checked DLTensor's elements are, whether two tensors share memory, and whether a
// tensor allows 16-byte accesses.
#ifndef SWITCHYARD_APEX_TENSOR_RULES_HPP
#define SWITCHYARD_APEX_TENSOR_RULES_HPP

#include <dlpack/dlpack.h>

#include <cstdint>

namespace switchyard::apex {

// data + byte_offset.
const void* address_of(const DLTensor& tensor);
void* address_of(DLTensor& tensor);

// Row stride in elements of a 2-D tensor (compact when strides is NULL).
int64_t row_stride_of(const DLTensor& tensor);

// Every row (or the vector) starts at a 16-byte boundary. NULL tensors pass.
bool allows_16_byte_access(const DLTensor* tensor);

// Throws SY_ERR_INVALID_ARGUMENT when `output` shares memory with `input` other than by being
// exactly the same tensor (same address, dtype, shape and strides: in place). Either may be
// NULL. Tensors are judged by the byte range from their first to their last element.
void require_same_or_disjoint(const DLTensor* output, const char* output_name,
                              const DLTensor* input, const char* input_name);
// Throws SY_ERR_INVALID_ARGUMENT when the two share any memory.
void require_disjoint(const DLTensor* a, const char* a_name, const DLTensor* b,
                      const char* b_name);

}  // namespace switchyard::apex

#endif
