// Helpers shared by the loader suites: fixture folders, isolated runtime options, host
// tensors, reference math and a capture of the core's log.
#ifndef SWITCHYARD_TEST_LOADER_SUPPORT_HPP
#define SWITCHYARD_TEST_LOADER_SUPPORT_HPP

#include <switchyard/switchyard.hpp>

#include <spdlog/sinks/ostream_sink.h>

#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace loader_test {

// <build>/tests/fixtures/<name>, and the file of plugin <plugin> in it.
std::string fixture(const std::string& name);
std::string fixture_file(const std::string& folder, const std::string& plugin);

// Options that see only the given folders: the system path is an empty folder and the
// process environment is not read. `environment` adds variables.
switchyard::RuntimeOptions isolated_options(
    std::vector<std::string> plugin_path,
    std::map<std::string, std::string> environment = {});

// A CPU tensor owning its values. Not copyable: the DLTensor points into it.
class HostTensor {
 public:
  HostTensor(std::vector<int64_t> shape, DLDataType dtype);
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;

  DLTensor* dl() { return &tensor_; }
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(bytes_.data());
  }
  int64_t elements() const;

 private:
  std::vector<int64_t> shape_;
  std::vector<unsigned char> bytes_;
  DLTensor tensor_{};
};

sy_ce_problem ce_problem(int64_t rows, int64_t vocab);
sy_norm_problem rms_problem(int64_t rows, int64_t hidden);

// Deterministic pseudo-random logits in [-3, 3) and labels in [0, vocab).
void fill_logits(HostTensor& logits, uint32_t seed);
void fill_labels(HostTensor& labels, int64_t vocab, uint32_t seed);

// float64 reference: loss_i = logsumexp(z_i) - z_i[t_i].
double reference_loss(const float* row, int64_t vocab, int64_t label);

// Collects what the core logs (at the logger's current level) while alive.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  std::string text() const { return stream_.str(); }
  int count(const std::string& needle) const;

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

}  // namespace loader_test

#endif
