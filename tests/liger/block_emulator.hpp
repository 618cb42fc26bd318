// Runs liger's CUDA kernels on the CPU: the kernel code of plugins/liger/kernels/*_device.cuh,
// compiled for the host, with each thread of a block a fiber (ucontext) on this thread. Fibers
// switch only at barriers (sync_threads, and the two barriers of every shuffle), so barriers and
// butterflies behave as on the GPU, in a fixed and repeatable order. Blocks run one after the
// other; block-shared variables are the kernels' `static` locals (SY_LIGER_SHARED) and a
// dynamic buffer filled with NaN bytes at every block start.
//
// What this cannot show: timing, occupancy, the GPU's ex2.approx (the host uses exp2),
// races between blocks (none by design: blocks own disjoint rows), code generation.
#ifndef SWITCHYARD_TESTS_LIGER_BLOCK_EMULATOR_HPP
#define SWITCHYARD_TESTS_LIGER_BLOCK_EMULATOR_HPP

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace liger_emu {

// Runs body() for every thread of every block. Throws std::runtime_error when a barrier is
// reached by only some threads of a block (undefined behaviour on the GPU).
void run(unsigned blocks, int threads, std::size_t shared_bytes, const std::function<void()>& body);

// Counters since the process started, for tests that want to see the emulator worked.
long long barriers_passed();

// The `launch` functor of the kernels' dispatch templates.
struct Launch {
  template <class... Params, class... Args>
  void operator()(unsigned blocks, int threads, std::size_t shared_bytes,
                  void (*kernel)(Params...), Args&&... args) const {
    run(blocks, threads, shared_bytes, [&] { kernel(args...); });
  }
};

}  // namespace liger_emu

#endif
