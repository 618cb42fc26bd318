// Launchers of te's normalization kernels (norm_forward.cu, norm_backward.cu). Each enqueues on
// `stream` on the current device (which must be `device`) and throws sy::Failure when the
// launch fails or sm_margin leaves no multiprocessor; none synchronises.
#ifndef SWITCHYARD_TE_NORM_KERNELS_HPP
#define SWITCHYARD_TE_NORM_KERNELS_HPP

#include "kernel_args.hpp"
#include "norm_plan.hpp"

#include <cstddef>

namespace switchyard::te {

// rows >= 1.
void launch_norm_forward(const NormForwardArgs& a, const NormLayout& layout, int device,
                         int sm_margin, void* stream);
// rows >= 1.
void launch_norm_backward(const NormBackwardArgs& a, const NormLayout& layout, int device,
                          int sm_margin, void* stream);
// Any chunk_count (0: dweight/dbias become 0, or stay as they are when accumulating).
void launch_norm_finalize(const NormFinalizeArgs& a, void* stream);

}  // namespace switchyard::te

#endif
