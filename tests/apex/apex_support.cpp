#include "apex_support.hpp"

#include "test_paths.hpp"

#include <doctest/doctest.h>
#include <dlfcn.h>

namespace apex_test {
namespace {

const sy_host g_host = {sizeof(sy_host), SY_ABI_MAJOR, SY_ABI_MINOR, "test", nullptr, nullptr};

}  // namespace

const sy_plugin* load_apex() {
  static const sy_plugin* plugin = [] {
    const std::string path = switchyard::test::plugin_dir() + "/libswitchyard-apex.so";
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    INFO("dlopen(" << path << "): " << (handle == nullptr ? dlerror() : "ok"));
    REQUIRE(handle != nullptr);
    auto entry = reinterpret_cast<sy_plugin_entry>(dlsym(handle, SY_PLUGIN_ENTRY_SYMBOL));
    const bool found = entry != nullptr;
    REQUIRE_MESSAGE(found, "no " SY_PLUGIN_ENTRY_SYMBOL " in " << path);
    return entry(&g_host);
  }();
  REQUIRE(plugin != nullptr);
  return plugin;
}

const sy_norm& norm() {
  const sy_plugin* plugin = load_apex();
  REQUIRE(plugin->norm != nullptr);
  return *plugin->norm;
}

bool can_run_here() {
  sy_error err = make_error();
  return load_apex()->probe(&err) == SY_OK;
}

std::string probe_message() {
  sy_error err = make_error();
  load_apex()->probe(&err);
  return err.message;
}

sy_norm_problem make_problem(sy_norm_kind kind, int64_t rows, int64_t hidden) {
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = kind;
  p.rows = rows;
  p.hidden = hidden;
  p.eps = 1e-5f;
  p.x_dtype = p.y_dtype = p.weight_dtype = p.grad_weight_dtype = sy::kBF16;
  p.device = DLDevice{kDLCUDA, 0};
  p.flags = 0;
  p.sm_margin = 0;
  return p;
}

Descriptor::Descriptor(DLDataType dtype, std::vector<int64_t> shape, int64_t row_stride,
                       DLDevice device, uintptr_t address)
    : shape_(std::move(shape)) {
  tensor_.data = reinterpret_cast<void*>(address);
  tensor_.device = device;
  tensor_.ndim = static_cast<int32_t>(shape_.size());
  tensor_.dtype = dtype;
  tensor_.shape = shape_.data();
  if (row_stride > 0 && shape_.size() == 2) {
    strides_ = {row_stride, 1};
    tensor_.strides = strides_.data();
  }
  tensor_.byte_offset = 0;
}

NormCall::NormCall(const sy_norm_problem& p)
    : problem(p),
      x(p.x_dtype, {p.rows, p.hidden}, 0, p.device, 0x10000000),
      weight(p.weight_dtype, {p.hidden}, 0, p.device, 0x20000000),
      bias(p.weight_dtype, {p.hidden}, 0, p.device, 0x21000000),
      y(p.y_dtype, {p.rows, p.hidden}, 0, p.device, 0x30000000),
      mean(sy::kF32, {p.rows}, 0, p.device, 0x40000000),
      rstd(sy::kF32, {p.rows}, 0, p.device, 0x41000000),
      dy(p.y_dtype, {p.rows, p.hidden}, 0, p.device, 0x50000000),
      x_or_y((p.flags & SY_NORM_MEMORY_EFFICIENT) != 0 ? p.y_dtype : p.x_dtype,
             {p.rows, p.hidden}, 0, p.device, 0x51000000),
      dx(p.x_dtype, {p.rows, p.hidden}, 0, p.device, 0x60000000),
      dweight(p.grad_weight_dtype, {p.hidden}, 0, p.device, 0x61000000),
      dbias(p.grad_weight_dtype, {p.hidden}, 0, p.device, 0x62000000) {}

sy_norm_forward_args NormCall::forward_args() {
  sy_norm_forward_args a{};
  a.struct_size = sizeof a;
  a.problem = &problem;
  a.x = x.dl();
  a.weight = problem.kind == SY_NORM_L2 ? nullptr : weight.dl();
  a.bias = problem.kind == SY_NORM_LAYER ? bias.dl() : nullptr;
  a.y = y.dl();
  a.mean = problem.kind == SY_NORM_LAYER ? mean.dl() : nullptr;
  a.rstd = rstd.dl();
  a.workspace = reinterpret_cast<void*>(kWorkspaceAddress);
  a.workspace_bytes = 0;
  a.stream = nullptr;
  return a;
}

sy_norm_backward_args NormCall::backward_args() {
  sy_norm_backward_args a{};
  a.struct_size = sizeof a;
  a.problem = &problem;
  a.dy = dy.dl();
  a.x_or_y = x_or_y.dl();
  a.weight = problem.kind == SY_NORM_L2 ? nullptr : weight.dl();
  a.bias = problem.kind == SY_NORM_LAYER ? bias.dl() : nullptr;
  a.mean = problem.kind == SY_NORM_LAYER ? mean.dl() : nullptr;
  a.rstd = rstd.dl();
  a.dx = dx.dl();
  a.dweight = problem.kind == SY_NORM_L2 ? nullptr : dweight.dl();
  a.dbias = problem.kind == SY_NORM_LAYER ? dbias.dl() : nullptr;
  int64_t bytes = 0;
  sy_error err = make_error();
  REQUIRE(norm().workspace_size(&problem, &bytes, &err) == SY_OK);
  a.workspace = reinterpret_cast<void*>(kWorkspaceAddress);
  a.workspace_bytes = bytes;
  a.stream = nullptr;
  return a;
}

void check_passed_argument_checks(sy_status got, const sy_error& err) {
  INFO("message: " << err.message);
  if (can_run_here()) {
    CHECK(got == SY_ERR_INVALID_ARGUMENT);
    CHECK(std::string(err.message).find("(0x") != std::string::npos);  // a fake address named
  } else {
    CHECK(got == SY_ERR_UNAVAILABLE);
    CHECK(std::string(err.message).find(probe_message()) != std::string::npos);
  }
}

}  // namespace apex_test
