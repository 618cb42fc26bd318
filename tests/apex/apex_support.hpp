// Test support for apex's suites: loading the built plugin, problems and tensor descriptors
// for its refusals, and error checks.
#ifndef SWITCHYARD_TESTS_APEX_SUPPORT_HPP
#define SWITCHYARD_TESTS_APEX_SUPPORT_HPP

#include "refusal_checks.hpp"

#include <switchyard/plugin.h>
#include <switchyard/plugin_helpers.hpp>

#include <initializer_list>
#include <string>
#include <vector>

namespace apex_test {

// Opens <plugin_dir>/libswitchyard-apex.so once and calls its entry (REQUIREs both).
const sy_plugin* load_apex();
const sy_norm& norm();

// Whether probe() says apex can run here (true only on a machine with a GPU), and its
// message otherwise.
bool can_run_here();
std::string probe_message();

// An error struct whose status (-1) no plugin writes, so a call must set it.
inline sy_error make_error() { return switchyard::test::make_error(-1); }

// CHECKs the status and that err.message contains every fragment.
using switchyard::test::check_refusal;

// A valid problem on cuda:0: bf16 everywhere, 4 rows of 1024.
sy_norm_problem make_problem(sy_norm_kind kind = SY_NORM_LAYER, int64_t rows = 4,
                             int64_t hidden = 1024);

// A DLTensor descriptor (no memory behind it: the address is fake and never dereferenced on
// this machine). Rows may be padded (row_stride > columns).
class Descriptor {
 public:
  Descriptor(DLDataType dtype, std::vector<int64_t> shape, int64_t row_stride = 0,
             DLDevice device = DLDevice{kDLCUDA, 0}, uintptr_t address = 0x10000000);
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  DLTensor* dl() { return &tensor_; }
  DLTensor& tensor() { return tensor_; }

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  DLTensor tensor_{};
};

// Descriptors for every argument of one problem, at distinct fake addresses, valid as given.
struct NormCall {
  explicit NormCall(const sy_norm_problem& problem);
  sy_norm_problem problem;
  Descriptor x, weight, bias, y, mean, rstd;    // forward
  Descriptor dy, x_or_y, dx, dweight, dbias;    // backward (mean, rstd, weight, bias shared)
  sy_norm_forward_args forward_args();
  sy_norm_backward_args backward_args();
  static constexpr int64_t kWorkspaceAddress = 0x70000000;
};

// When the arguments are right, what a call can still answer here: on a machine without a GPU
// SY_ERR_UNAVAILABLE with probe's reason; with one, the fake addresses are refused.
void check_passed_argument_checks(sy_status got, const sy_error& err);

}  // namespace apex_test

#endif
