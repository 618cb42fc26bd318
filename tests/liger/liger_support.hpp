// Test support for the liger plugin's CPU-side suites: loading the built plugin with a test
// host whose options the tests set, and DLPack descriptors of CUDA tensors at made-up
// addresses (validation reads only descriptors, so refusals are testable without a GPU).
#ifndef SWITCHYARD_TESTS_LIGER_SUPPORT_HPP
#define SWITCHYARD_TESTS_LIGER_SUPPORT_HPP

#include "refusal_checks.hpp"

#include <switchyard/plugin.h>
#include <switchyard/plugin_helpers.hpp>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace liger_test {

// dlopen handle of <plugin_dir>/libswitchyard-liger.so (opened once, kept open).
void* library();
// Calls the entry with the test host after setting its options ({"casting_mode", "llama"});
// options not named are unset. Returns the descriptor or NULL when the entry refused.
const sy_plugin* load(const std::map<std::string, std::string>& options = {});
// Calls the entry with any host (NULL included).
const sy_plugin* call_entry(const sy_host* host);
std::vector<std::string> host_log();  // "LEVEL [plugin] message"
void clear_host_log();
bool logged(const std::string& level, std::initializer_list<const char*> fragments);

// True when the plugin's probe says a GPU can run it here (the GPU machine).
bool gpu_available();

// Error struct ready for a call; CHECKs of a refusal (tests/support/refusal_checks.hpp).
using switchyard::test::check_refusal;
using switchyard::test::make_error;

// A DLTensor descriptor of a tensor that is never dereferenced by the tests.
class Fake {
 public:
  Fake(DLDataType dtype, std::vector<int64_t> shape, uintptr_t address,
       DLDevice device = DLDevice{kDLCUDA, 0}, int64_t row_stride = 0);
  Fake(const Fake&) = delete;
  Fake& operator=(const Fake&) = delete;
  DLTensor* dl() { return &tensor_; }

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  DLTensor tensor_{};
};

constexpr DLDevice kCuda{kDLCUDA, 0};
constexpr DLDevice kCpu{kDLCPU, 0};

sy_ce_problem ce_problem(int64_t rows, int64_t vocab, DLDataType logits = sy::kBF16);
sy_norm_problem norm_problem(sy_norm_kind kind, int64_t rows, int64_t hidden,
                             DLDataType dtype = sy::kBF16);

}  // namespace liger_test

#endif
