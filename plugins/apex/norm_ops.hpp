// The bodies of apex's four norm entry points. Each throws sy::Failure with the reason;
// plugin.cpp runs them under sy::guarded.
#ifndef SWITCHYARD_APEX_NORM_OPS_HPP
#define SWITCHYARD_APEX_NORM_OPS_HPP

#include <switchyard/norm.h>

#include <cstdint>

namespace switchyard::apex {

void supports(const sy_norm_problem* problem);
int64_t workspace_size(const sy_norm_problem* problem);
void forward(const sy_norm_forward_args* args);
void backward(const sy_norm_backward_args* args);

}  // namespace switchyard::apex

#endif
