// Cross entropy on the GPU: turns validated ABI arguments into kernel launches and, for tensor
// parallelism, the host's collectives between them.
#ifndef SWITCHYARD_LIGER_CE_OP_HPP
#define SWITCHYARD_LIGER_CE_OP_HPP

#include "options.hpp"

#include <switchyard/loss.h>

namespace switchyard::liger {

// Arguments must have passed validate_ce_forward / validate_ce_backward.
void ce_forward(const sy_ce_forward_args& args, const Options& options);
void ce_backward(const sy_ce_backward_args& args, const Options& options);

}  // namespace switchyard::liger

#endif
