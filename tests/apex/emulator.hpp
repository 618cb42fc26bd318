// apex's kernels run on the CPU: the per-thread functions of plugins/apex/row_math.hpp for
// every thread of every row group, joined by reductions in the kernels' order (kernels.cuh):
// a butterfly over lane masks 1…16 with the lower lane on the left, then warps in order.
// Grids are not emulated: no result depends on them (each row, and each chunk of rows, is
// handled by one row group from start to end).
#ifndef SWITCHYARD_TESTS_APEX_EMULATOR_HPP
#define SWITCHYARD_TESTS_APEX_EMULATOR_HPP

#include "kernel_types.hpp"
#include "welford.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace apex_test {

namespace ap = switchyard::apex;

// forward: mean (LayerNorm), rstd and y, as the kernels would write them.
void emulate_forward(const ap::ForwardParams& params);
// backward: dx, the per-chunk partial sums (params.partial_*, host memory) and dweight/dbias,
// as the row kernels and the final kernel would write them.
void emulate_backward(const ap::BackwardParams& params);

// The row reductions (sizes: a multiple of 32 threads).
ap::WelfordStats reduce_welford(const std::vector<ap::WelfordStats>& per_thread);
std::pair<float, float> reduce_sums(const std::vector<std::pair<float, float>>& per_thread);

// Lanes of a butterfly that ended with different bits than lane 0 (the kernels rely on there
// being none), counted since the process started.
int64_t lane_disagreements();

}  // namespace apex_test

#endif
