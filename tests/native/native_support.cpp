#include "native_support.hpp"

#include "test_host.hpp"
#include "test_paths.hpp"

#include <switchyard/float16.hpp>

#include <doctest/doctest.h>
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

namespace native_test {
namespace {

sy_plugin_entry entry() {
  static void* handle = nullptr;
  static sy_plugin_entry function = nullptr;
  if (function == nullptr) {
    const std::string path = switchyard::test::plugin_dir() + "/libswitchyard-native.so";
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    INFO("dlopen(" << path << "): " << (handle == nullptr ? dlerror() : "ok"));
    REQUIRE(handle != nullptr);
    function = reinterpret_cast<sy_plugin_entry>(dlsym(handle, SY_PLUGIN_ENTRY_SYMBOL));
    const bool found = function != nullptr;
    REQUIRE_MESSAGE(found, "no sy_plugin_v1 in " << path);
  }
  return function;
}

const sy_plugin* g_plugin = nullptr;

int64_t element_size(DLDataType t) { return t.bits / 8; }

}  // namespace

const sy_plugin* load_native(const std::string& threads) {
  sy_plugin_entry function = entry();
  // The "threads" option the host reports; "" = unset.
  switchyard::test::set_host_options(
      "native", threads.empty() ? std::map<std::string, std::string>{}
                                : std::map<std::string, std::string>{{"threads", threads}});
  g_plugin = function(switchyard::test::test_host());
  return g_plugin;
}

const sy_plugin* call_entry(const sy_host* host) {
  g_plugin = entry()(host);
  return g_plugin;
}

const sy_plugin* load_native(int threads) { return load_native(std::to_string(threads)); }

const sy_cross_entropy& ce() {
  if (g_plugin == nullptr) load_native();
  REQUIRE(g_plugin != nullptr);
  return *g_plugin->cross_entropy;
}

const sy_norm& norm() {
  if (g_plugin == nullptr) load_native();
  REQUIRE(g_plugin != nullptr);
  return *g_plugin->norm;
}

std::vector<std::string> host_log() { return switchyard::test::host_log_lines(); }

void clear_host_log() { switchyard::test::clear_host_log_lines(); }

// ---- Tensor ---------------------------------------------------------------------------------

Tensor::Tensor(DLDataType dtype, std::vector<int64_t> shape, int64_t row_stride)
    : dtype_(dtype), shape_(std::move(shape)) {
  REQUIRE((shape_.size() == 1 || shape_.size() == 2));
  int64_t elements = shape_[0];
  if (shape_.size() == 2) {
    const int64_t stride = row_stride > 0 ? row_stride : shape_[1];
    strides_ = {stride, 1};
    elements = shape_[0] * stride;
  } else {
    strides_ = {1};
  }
  storage_.assign(static_cast<size_t>((elements * element_size(dtype) + 7) / 8 + 1), 0);
}

DLTensor* Tensor::dl() {
  tensor_.data = storage_.data();
  tensor_.device = DLDevice{kDLCPU, 0};
  tensor_.ndim = static_cast<int32_t>(shape_.size());
  tensor_.dtype = dtype_;
  tensor_.shape = shape_.data();
  tensor_.strides = strides_.data();
  tensor_.byte_offset = 0;
  return &tensor_;
}

void* Tensor::element(int64_t i, int64_t j) const {
  const int64_t index = i * strides_[0] + (shape_.size() == 2 ? j : 0);
  return const_cast<char*>(reinterpret_cast<const char*>(storage_.data())) +
         index * element_size(dtype_);
}

double Tensor::get(int64_t i, int64_t j) const {
  const void* p = element(i, j);
  if (sy::same(dtype_, sy::kF32)) return *static_cast<const float*>(p);
  if (sy::same(dtype_, sy::kBF16)) return sy::bf16_to_float(*static_cast<const uint16_t*>(p));
  if (sy::same(dtype_, sy::kF16)) return sy::f16_to_float(*static_cast<const uint16_t*>(p));
  if (sy::same(dtype_, sy::kI64)) return static_cast<double>(*static_cast<const int64_t*>(p));
  if (sy::same(dtype_, sy::kI32)) return *static_cast<const int32_t*>(p);
  FAIL("unsupported test dtype " << sy::dtype_name(dtype_));
  return 0;
}

void Tensor::set(int64_t i, int64_t j, double value) {
  void* p = element(i, j);
  if (sy::same(dtype_, sy::kF32)) *static_cast<float*>(p) = static_cast<float>(value);
  else if (sy::same(dtype_, sy::kBF16)) *static_cast<uint16_t*>(p) = sy::float_to_bf16(static_cast<float>(value));
  else if (sy::same(dtype_, sy::kF16)) *static_cast<uint16_t*>(p) = sy::float_to_f16(static_cast<float>(value));
  else if (sy::same(dtype_, sy::kI64)) *static_cast<int64_t*>(p) = static_cast<int64_t>(value);
  else if (sy::same(dtype_, sy::kI32)) *static_cast<int32_t*>(p) = static_cast<int32_t>(value);
  else FAIL("unsupported test dtype " << sy::dtype_name(dtype_));
}

std::vector<double> Tensor::values() const {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(size()));
  for (int64_t i = 0; i < rows(); ++i)
    for (int64_t j = 0; j < cols(); ++j) out.push_back(get(i, j));
  return out;
}

void Tensor::fill(const std::vector<double>& values) {
  REQUIRE(static_cast<int64_t>(values.size()) == size());
  for (int64_t i = 0; i < rows(); ++i)
    for (int64_t j = 0; j < cols(); ++j) set(i, j, values[static_cast<size_t>(i * cols() + j)]);
}

void Tensor::poison() {
  if (dtype_.code == kDLInt) {
    std::memset(storage_.data(), 0x5a, storage_.size() * 8);  // a large nonsense integer
    return;
  }
  const int64_t total = static_cast<int64_t>(storage_.size() * 8 / element_size(dtype_));
  for (int64_t k = 0; k < total; ++k) {
    char* p = reinterpret_cast<char*>(storage_.data()) + k * element_size(dtype_);
    if (dtype_.bits == 32) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(p, &nan, 4);
    } else {
      const uint16_t nan = sy::same(dtype_, sy::kBF16) ? 0x7fc0 : 0x7e00;
      std::memcpy(p, &nan, 2);
    }
  }
}

bool Tensor::same_bits(const Tensor& other) const {
  if (!sy::same(dtype_, other.dtype_) || shape_ != other.shape_) return false;
  for (int64_t i = 0; i < rows(); ++i)
    for (int64_t j = 0; j < cols(); ++j)
      if (std::memcmp(element(i, j), other.element(i, j), static_cast<size_t>(element_size(dtype_))) != 0)
        return false;
  return true;
}

uint16_t Tensor::bits16(int64_t i, int64_t j) const {
  uint16_t bits;
  std::memcpy(&bits, element(i, j), 2);
  return bits;
}

// ---- Random -------------------------------------------------------------------------------

uint64_t Random::next() {
  state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
  uint64_t x = state_;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

double Random::uniform(double low, double high) {
  return low + (high - low) * (static_cast<double>(next() >> 11) / 9007199254740992.0);
}

int64_t Random::integer(int64_t low, int64_t high_exclusive) {
  return low + static_cast<int64_t>(next() % static_cast<uint64_t>(high_exclusive - low));
}

// ---- comparison ---------------------------------------------------------------------------

void check_close(const std::vector<double>& actual, const std::vector<double>& expected,
                 double rtol, double atol, const std::string& what) {
  REQUIRE(actual.size() == expected.size());
  size_t worst = 0;
  double worst_excess = -1;
  bool all_ok = true;
  for (size_t k = 0; k < actual.size(); ++k) {
    const double bound = rtol * std::fabs(expected[k]) + atol;
    const double error = std::fabs(actual[k] - expected[k]);
    const bool ok = error <= bound;  // NaN fails
    if (!ok) all_ok = false;
    const double excess = std::isnan(error) ? 1e300 : error - bound;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = k;
    }
  }
  INFO(what << ": worst element " << worst << " actual " << actual[worst] << " expected "
            << expected[worst] << " (rtol " << rtol << ", atol " << atol << ")");
  CHECK(all_ok);
}

int64_t ulps_from_rounded(DLDataType dtype, uint16_t actual_bits, double expected) {
  const uint16_t rounded = sy::same(dtype, sy::kBF16) ? sy::float_to_bf16(static_cast<float>(expected))
                                                      : sy::float_to_f16(static_cast<float>(expected));
  auto ordered = [](uint16_t b) -> int64_t {
    return (b & 0x8000u) ? -static_cast<int64_t>(b & 0x7fffu) : static_cast<int64_t>(b);
  };
  return std::llabs(ordered(actual_bits) - ordered(rounded));
}

void check_ulps(const Tensor& actual, const std::vector<double>& expected, int64_t max_ulps,
                const std::string& what) {
  REQUIRE(static_cast<int64_t>(expected.size()) == actual.size());
  int64_t worst = 0;
  int64_t worst_index = 0;
  for (int64_t i = 0; i < actual.rows(); ++i)
    for (int64_t j = 0; j < actual.cols(); ++j) {
      const int64_t k = i * actual.cols() + j;
      const int64_t u = ulps_from_rounded(actual.dtype(), actual.bits16(i, j), expected[static_cast<size_t>(k)]);
      if (u > worst) {
        worst = u;
        worst_index = k;
      }
    }
  INFO(what << ": worst element " << worst_index << " is " << worst << " ulp from the rounded reference "
            << expected[static_cast<size_t>(worst_index)]);
  CHECK(worst <= max_ulps);
}

double max_abs(const std::vector<double>& values) {
  double m = 0;
  for (double v : values) m = std::max(m, std::fabs(v));
  return m;
}

}  // namespace native_test
