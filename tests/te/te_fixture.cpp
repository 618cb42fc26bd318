#include "te_fixture.hpp"

#include "test_paths.hpp"

#include <doctest/doctest.h>
#include <dlfcn.h>

#include <cstdint>
#include <mutex>

namespace te_test {
namespace {

std::mutex g_log_mutex;
std::vector<std::string> g_log;

void host_log(sy_log_level, const char* plugin, const char* message) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_log.push_back(std::string(plugin) + ": " + message);
}
const char* host_option(const char*, const char*) { return nullptr; }

const sy_host kHost = {sizeof(sy_host), SY_ABI_MAJOR, SY_ABI_MINOR, "test", host_log, host_option};

Te load() {
  Te t;
  t.path = switchyard::test::plugin_dir() + "/libswitchyard-te.so";
  void* handle = dlopen(t.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    FAIL("cannot load " << t.path << ": " << (error != nullptr ? error : "?"));
  }
  auto entry = reinterpret_cast<sy_plugin_entry>(dlsym(handle, SY_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) FAIL(t.path << " has no " << SY_PLUGIN_ENTRY_SYMBOL);
  t.plugin = entry(&kHost);
  if (t.plugin == nullptr) FAIL("sy_plugin_v1 returned NULL");
  return t;
}

}  // namespace

const Te& te() {
  static const Te t = load();
  return t;
}

std::vector<std::string> logged() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  return g_log;
}

sy_status Te::probe(std::string* message) const {
  sy_error err = make_error();
  const sy_status status = plugin->probe(&err);
  *message = err.message;
  return status;
}

bool Te::gpu_usable() const {
  std::string ignored;
  return probe(&ignored) == SY_OK;
}

Result result_of(sy_status status, const sy_error& err) {
  Result r;
  r.status = status;
  r.message = err.message;
  return r;
}

FakeTensor::FakeTensor(DLDevice device, DLDataType dtype, std::vector<int64_t> shape,
                       int64_t row_stride)
    : shape_(std::move(shape)) {
  const int64_t rows = shape_.size() == 2 ? shape_[0] : 1;
  const int64_t cols = shape_.back();
  const int64_t stride = row_stride > 0 ? row_stride : cols;
  const int64_t elements = rows > 0 ? (rows - 1) * stride + cols : 0;
  const int64_t bytes = elements * ((dtype.bits + 7) / 8) + 512;
  storage_ = std::make_shared<std::vector<unsigned char>>(static_cast<size_t>(bytes) + 256);
  auto base = reinterpret_cast<uintptr_t>(storage_->data());
  base = (base + 255) & ~uintptr_t{255};
  tensor_.data = reinterpret_cast<void*>(base);
  tensor_.device = device;
  tensor_.ndim = static_cast<int32_t>(shape_.size());
  tensor_.dtype = dtype;
  tensor_.shape = shape_.data();
  if (row_stride > 0 && shape_.size() == 2) strides_ = {row_stride, 1};
  rebind();
}

FakeTensor::FakeTensor(const FakeTensor& other)
    : storage_(other.storage_), shape_(other.shape_), strides_(other.strides_),
      tensor_(other.tensor_) {
  rebind();
}

FakeTensor& FakeTensor::operator=(const FakeTensor& other) {
  storage_ = other.storage_;
  shape_ = other.shape_;
  strides_ = other.strides_;
  tensor_ = other.tensor_;
  rebind();
  return *this;
}

void FakeTensor::rebind() {
  tensor_.shape = shape_.data();
  tensor_.strides = strides_.empty() ? nullptr : strides_.data();
}

FakeTensor FakeTensor::shifted(int64_t elements) const {
  FakeTensor t = *this;
  t.tensor_.byte_offset += static_cast<uint64_t>(elements * ((tensor_.dtype.bits + 7) / 8));
  return t;
}

FakeTensor FakeTensor::with_byte_offset(uint64_t bytes) const {
  FakeTensor t = *this;
  t.tensor_.byte_offset += bytes;
  return t;
}

sy_ce_problem ce_problem(int64_t rows, int64_t vocab, DLDataType logits, DLDevice device) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = rows;
  p.vocab_local = vocab;
  p.vocab_start = 0;
  p.vocab_size = vocab;
  p.logits_dtype = logits;
  p.label_dtype = kI64;
  p.grad_dtype = logits;
  p.device = device;
  p.tp_size = 1;
  p.label_smoothing = 0.0f;
  p.smoothing = SY_SMOOTHING_MEGATRON;
  p.ignore_index = -100;
  p.flags = 0;
  return p;
}

sy_norm_problem norm_problem(sy_norm_kind kind, int64_t rows, int64_t hidden, DLDataType dtype,
                             DLDevice device) {
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = kind;
  p.rows = rows;
  p.hidden = hidden;
  p.eps = 1e-5f;
  p.x_dtype = p.y_dtype = p.weight_dtype = p.grad_weight_dtype = dtype;
  p.device = device;
  p.flags = 0;
  p.sm_margin = 0;
  return p;
}

}  // namespace te_test
