// The device helpers every generated source starts with: scalar types, dtype conversions
// (round to nearest even, by the PTX cvt instructions), vector loads/stores that fall back to
// scalar accesses for misaligned rows, and deterministic block reductions.
//
// The primitives that need a GPU (inline PTX, warp shuffles, barriers, atomics) sit behind
// `#ifndef SY_EMULATION`, so that the test suite can compile the very same text as host C++
// against a CPU emulation of those primitives (tests/fused/emulator) and run the kernels.
#ifndef SWITCHYARD_FUSED_JIT_SOURCE_PRELUDE_HPP
#define SWITCHYARD_FUSED_JIT_SOURCE_PRELUDE_HPP

#include <string>

namespace switchyard::fused::jit {

// The prelude followed by the kernel argument structs (kernel_args.hpp).
std::string source_prelude();

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_SOURCE_PRELUDE_HPP
