// LayerNorm / RMSNorm / L2Norm on the GPU: validated ABI arguments to kernel launches.
#ifndef SWITCHYARD_LIGER_NORM_OP_HPP
#define SWITCHYARD_LIGER_NORM_OP_HPP

#include "options.hpp"

#include <switchyard/norm.h>

namespace switchyard::liger {

// Arguments must have passed validate_norm_forward / validate_norm_backward.
void norm_forward(const sy_norm_forward_args& args, const Options& options);
void norm_backward(const sy_norm_backward_args& args, const Options& options);

}  // namespace switchyard::liger

#endif
