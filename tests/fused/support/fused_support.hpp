// Helpers shared by the fused suites: temporary folders, host tensors that claim to live on
// cuda:0 (the emulator runs the kernels on host memory), a fake sy_host with options and a
// log, and running a program with a chosen environment.
#ifndef SWITCHYARD_TESTS_FUSED_SUPPORT_HPP
#define SWITCHYARD_TESTS_FUSED_SUPPORT_HPP

#include "run_process.hpp"
#include "temp_dir.hpp"

#include <switchyard/plugin.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace switchyard::fused::test {

// A fresh folder under /tmp, removed with its contents at scope exit.
using switchyard::test::TempDir;

// Names of the files in a folder (sorted), for "what did the cache write".
std::vector<std::string> files_in(const std::string& folder);

// A 1-D or 2-D tensor in host memory, described as living on `device` (cuda:0 by default).
// Rows may be padded (row_stride > columns) and the data may start at an odd byte offset
// from a 16-byte boundary (misaligned), to exercise the kernels' scalar paths.
class HostTensor {
 public:
  HostTensor(DLDataType dtype, std::vector<int64_t> shape, int64_t row_stride = 0,
             int64_t misalign_bytes = 0, DLDevice device = DLDevice{kDLCUDA, 0});
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;

  DLTensor* get() { return &tensor_; }
  const DLTensor* get() const { return &tensor_; }
  int64_t rows() const { return shape_[0]; }
  int64_t columns() const { return shape_.size() == 2 ? shape_[1] : 1; }
  int64_t size() const { return rows() * columns(); }

  // Element (i, j) (j = 0 for 1-D) as double; set() rounds to the dtype.
  double at(int64_t i, int64_t j = 0) const;
  void set(int64_t i, int64_t j, double value);
  void set(int64_t i, double value) { set(i, 0, value); }
  // Every element row-major, as double.
  std::vector<double> values() const;
  void fill_all(double value);
  // The raw bytes of every element's storage (padding excluded), row-major.
  std::vector<unsigned char> element_bytes() const;
  // Fills every byte of the allocation (padding included) with `byte` (poison).
  void poison(unsigned char byte = 0xff);
  unsigned char* padding_byte(int64_t row);  // a byte of row padding, nullptr when none

 private:
  unsigned char* element(int64_t i, int64_t j) const;
  std::vector<int64_t> shape_;
  int64_t strides_[2] = {0, 0};
  int64_t element_bytes_ = 0;
  std::unique_ptr<unsigned char[]> storage_;
  size_t storage_bytes_ = 0;
  DLTensor tensor_{};
};

// An sy_host whose options come from a map and whose log lines are kept.
class FakeHost {
 public:
  explicit FakeHost(std::map<std::string, std::string> options = {});
  ~FakeHost();
  const sy_host* get() const { return &host_; }
  std::vector<std::string> log() const;
  std::string log_text() const;
  void set_option(const std::string& key, const std::string& value);

 private:
  sy_host host_{};
};

using switchyard::test::ProcessResult;

// Runs `program args...` with exactly `environment` (plus PATH) and captures its output.
ProcessResult run_program(const std::string& program, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& environment);

}  // namespace switchyard::fused::test

#endif  // SWITCHYARD_TESTS_FUSED_SUPPORT_HPP
