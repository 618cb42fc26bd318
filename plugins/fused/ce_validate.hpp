// Cross-entropy argument checking: everything that can be decided from the problem and the
// tensor descriptors without reading tensor data. The ABI's rules are the SDK's
// (<switchyard/ce_checks.hpp>); fused adds its devices, limits, aliasing rule and workspace.
// Every function throws sy::Failure with a message naming the argument, what was given and
// what is expected.
#ifndef SWITCHYARD_FUSED_CE_VALIDATE_HPP
#define SWITCHYARD_FUSED_CE_VALIDATE_HPP

#include <switchyard/ce_checks.hpp>
#include <switchyard/loss.h>

#include <cstdint>

namespace switchyard::fused {

// Limits of the generated kernels: rows are grid.x (< 2^31); a row's chunks of 16384 columns
// are grid.y (<= 65535), which also keeps columns within the 32-bit keys of the argmax.
inline constexpr int64_t kMaxCeRows = 2147483647;
inline constexpr int64_t kMaxVocabLocal = int64_t{65535} * 16384;

// The problem alone. INVALID_ARGUMENT for a request that cannot mean anything, UNSUPPORTED
// for a valid one fused does not implement (CPU tensors, sizes beyond the kernels' limits).
void validate_ce_problem(const sy_ce_problem* problem);

// The args struct and its problem pointer, before anything else is read.
using sy::ce_problem_of;

// Tensors, communicator, aliasing and workspace (after validate_ce_problem).
void validate_ce_forward(const sy_ce_forward_args* args, int64_t required_workspace_bytes);
void validate_ce_backward(const sy_ce_backward_args* args);

}  // namespace switchyard::fused

#endif  // SWITCHYARD_FUSED_CE_VALIDATE_HPP
