// Test support for the native plugin's suites: loading the built plugin with a test host whose
// "threads" option the tests control, owning DLPack tensors, and comparing results.
#ifndef SWITCHYARD_TESTS_NATIVE_SUPPORT_HPP
#define SWITCHYARD_TESTS_NATIVE_SUPPORT_HPP

#include "refusal_checks.hpp"

#include <switchyard/plugin.h>
#include <switchyard/plugin_helpers.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace native_test {

// ---- the plugin ---------------------------------------------------------------------------

// Opens <plugin_dir>/libswitchyard-native.so once (kept open for the process) and calls its
// entry with a test host whose option("native", "threads") returns `threads` ("" = unset).
// Returns the descriptor (NULL when the entry refused). REQUIREs that the file loads.
const sy_plugin* load_native(const std::string& threads = "");
const sy_plugin* load_native(int threads);
// Calls the entry with any host (NULL included); the next load_native() restores the test host.
const sy_plugin* call_entry(const sy_host* host);
const sy_cross_entropy& ce();  // of the last load_native()
const sy_norm& norm();
// Lines the plugin logged through the test host ("LEVEL [native] message").
std::vector<std::string> host_log();
void clear_host_log();

// ---- tensors ------------------------------------------------------------------------------

// An owned 1-D or 2-D DLPack tensor on the CPU. Rows may be padded (row_stride > columns).
class Tensor {
 public:
  Tensor() = default;
  Tensor(DLDataType dtype, std::vector<int64_t> shape, int64_t row_stride = 0);
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  Tensor(Tensor&&) = default;
  Tensor& operator=(Tensor&&) = default;

  DLTensor* dl();  // valid until this Tensor moves
  const DLTensor* dl() const { return const_cast<Tensor*>(this)->dl(); }
  int64_t rows() const { return shape_[0]; }
  int64_t cols() const { return shape_.size() == 2 ? shape_[1] : 1; }
  int64_t size() const { return rows() * cols(); }
  DLDataType dtype() const { return dtype_; }

  // Logical element (i, j) (j = 0 for 1-D) as double / set from double (rounded to dtype).
  double get(int64_t i, int64_t j = 0) const;
  void set(int64_t i, int64_t j, double value);
  void set(int64_t i, double value) { set(i, 0, value); }
  std::vector<double> values() const;           // row-major, logical elements only
  void fill(const std::vector<double>& values);  // row-major
  void poison();  // NaN for floats, a sentinel for integers, padding included
  // Byte-exact comparison of the logical elements.
  bool same_bits(const Tensor& other) const;
  // The raw 16-bit pattern of element (i, j) of a bfloat16/float16 tensor.
  uint16_t bits16(int64_t i, int64_t j) const;
  void* element(int64_t i, int64_t j) const;

 private:
  DLDataType dtype_{};
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  std::vector<uint64_t> storage_;  // 8-byte aligned
  DLTensor tensor_{};
};

// A workspace of exactly `bytes`.
struct Workspace {
  explicit Workspace(int64_t bytes) : storage(static_cast<size_t>((bytes + 7) / 8) + 1), bytes(bytes) {}
  void* data() { return storage.data(); }
  std::vector<uint64_t> storage;
  int64_t bytes;
};

// ---- data ---------------------------------------------------------------------------------

// Deterministic pseudo-random numbers.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed * 6364136223846793005ull + 1442695040888963407ull) {}
  uint64_t next();
  double uniform(double low, double high);
  int64_t integer(int64_t low, int64_t high_exclusive);

 private:
  uint64_t state_;
};

// ---- comparison ---------------------------------------------------------------------------

// |actual - expected| <= rtol |expected| + atol for every element; reports the worst.
void check_close(const std::vector<double>& actual, const std::vector<double>& expected,
                 double rtol, double atol, const std::string& what);
// Units in the last place between a bfloat16/float16 value and the correctly rounded
// `expected` (rounded here from double).
int64_t ulps_from_rounded(DLDataType dtype, uint16_t actual_bits, double expected);
// Every element of a 16-bit tensor within `max_ulps` of the rounded reference.
void check_ulps(const Tensor& actual, const std::vector<double>& expected, int64_t max_ulps,
                const std::string& what);
double max_abs(const std::vector<double>& values);

// Error struct ready for a call; CHECKs of a refusal (tests/support/refusal_checks.hpp).
using switchyard::test::check_refusal;
using switchyard::test::make_error;

}  // namespace native_test

#endif
