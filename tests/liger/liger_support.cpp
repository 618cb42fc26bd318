#include "liger_support.hpp"

#include "test_host.hpp"
#include "test_paths.hpp"

#include <doctest/doctest.h>
#include <dlfcn.h>

#include <algorithm>

namespace liger_test {
namespace {

sy_plugin_entry entry() {
  auto symbol = reinterpret_cast<sy_plugin_entry>(dlsym(library(), SY_PLUGIN_ENTRY_SYMBOL));
  const bool found = symbol != nullptr;
  REQUIRE(found);
  return symbol;
}

}  // namespace

void* library() {
  static void* handle = [] {
    const std::string path = switchyard::test::plugin_dir() + "/libswitchyard-liger.so";
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) FAIL("cannot load " << path << ": " << dlerror());
    return h;
  }();
  return handle;
}

const sy_plugin* load(const std::map<std::string, std::string>& options) {
  switchyard::test::set_host_options("liger", options);
  return entry()(switchyard::test::test_host());
}

const sy_plugin* call_entry(const sy_host* host) { return entry()(host); }

std::vector<std::string> host_log() { return switchyard::test::host_log_lines(); }

void clear_host_log() { switchyard::test::clear_host_log_lines(); }

bool logged(const std::string& level, std::initializer_list<const char*> fragments) {
  const std::vector<std::string> lines = host_log();
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
    if (line.rfind(level + " [liger] ", 0) != 0) return false;
    for (const char* f : fragments)
      if (line.find(f) == std::string::npos) return false;
    return true;
  });
}

bool gpu_available() {
  const sy_plugin* plugin = load();
  REQUIRE(plugin != nullptr);
  sy_error err = make_error();
  return plugin->probe(&err) == SY_OK;
}

Fake::Fake(DLDataType dtype, std::vector<int64_t> shape, uintptr_t address, DLDevice device,
           int64_t row_stride)
    : shape_(std::move(shape)) {
  tensor_.data = reinterpret_cast<void*>(address);
  tensor_.device = device;
  tensor_.ndim = static_cast<int32_t>(shape_.size());
  tensor_.dtype = dtype;
  tensor_.shape = shape_.data();
  if (row_stride != 0) {
    strides_ = {row_stride, 1};
    tensor_.strides = strides_.data();
  }
}

sy_ce_problem ce_problem(int64_t rows, int64_t vocab, DLDataType logits) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = rows;
  p.vocab_local = p.vocab_size = vocab;
  p.logits_dtype = p.grad_dtype = logits;
  p.label_dtype = sy::kI64;
  p.device = kCuda;
  p.tp_size = 1;
  p.ignore_index = -100;
  return p;
}

sy_norm_problem norm_problem(sy_norm_kind kind, int64_t rows, int64_t hidden, DLDataType dtype) {
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = kind;
  p.rows = rows;
  p.hidden = hidden;
  p.eps = 1e-5f;
  p.x_dtype = p.y_dtype = p.weight_dtype = p.grad_weight_dtype = dtype;
  p.device = kCuda;
  return p;
}

}  // namespace liger_test
