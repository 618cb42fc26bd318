// A CPU emulator for the fused plugin's generated kernels, so that the kernels and the
// plugin's host-side sequences (fused::Device) run for real on a machine without a GPU.
//
// The very source text NVRTC gets is compiled as host C++ (g++ -include cuda_emulation.hpp)
// into a shared object, cached by content. A launch runs the blocks one after another; the
// threads of a block are fibers (ucontext) switched only at __syncthreads and warp shuffles,
// in an order the test chooses (forward or reverse), so a kernel whose result depends on the
// order threads run in, or a barrier some threads miss (reported as a deadlock), is caught.
//
// What it cannot show: anything about the GPU itself — NVRTC's code generation, the memory
// model between blocks, the PTX conversions, speed.
#ifndef SWITCHYARD_TESTS_FUSED_EMULATOR_HPP
#define SWITCHYARD_TESTS_FUSED_EMULATOR_HPP

#include "device_api.hpp"
#include "jit/ce_source.hpp"
#include "jit/norm_source.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace switchyard::fused::test {

// Forward / Reverse: every ready thread in turn, lowest (highest) first. WarpByWarp: the lowest
// warp with a ready thread runs until all its threads wait at a __syncthreads, so one warp
// gets as far ahead of the others as CUDA allows (exposes a missing barrier).
enum class ThreadOrder { Forward, Reverse, WarpByWarp };

class Emulator {
 public:
  static Emulator& instance();

  // The kernels of a generated source, compiled for the host. Throws std::runtime_error with
  // the compiler's output when the source does not compile.
  std::array<const void*, jit::kCeKernelCount> ce_kernels(const jit::CeSpecialization& spec);
  std::array<const void*, jit::kNormKernelCount> norm_kernels(const jit::NormSpecialization& spec);

  // Runs kernel(args) over the grid; blocks in row-major order (reversed with
  // ThreadOrder::Reverse, like the threads). Throws std::runtime_error on a deadlock or a
  // shuffle with exited lanes.
  void launch(const void* kernel, LaunchShape shape, const void* args);

  void set_order(ThreadOrder order);
  ThreadOrder order() const;
  int64_t launches() const;

  struct Kernel;

 private:
  Emulator() = default;
  std::vector<const void*> load(const std::string& source, const std::vector<std::string>& names,
                                int args_kind);
};

// fused::Device over host memory and the emulator. Counts what was done.
class EmulatedDevice final : public Device {
 public:
  void launch(const void* kernel, LaunchShape shape, const void* args, const char* name,
              void* stream) override;
  void fill(void* pointer, int value, size_t bytes, void* stream) override;
  void read(void* host, const void* pointer, size_t bytes, void* stream) override;

  std::vector<std::string> launched;  // kernel names, in order
  int64_t reads = 0;                  // host synchronisations
};

}  // namespace switchyard::fused::test

#endif  // SWITCHYARD_TESTS_FUSED_EMULATOR_HPP
