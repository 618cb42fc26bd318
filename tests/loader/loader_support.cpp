#include "loader_support.hpp"

#include "log.hpp"
#include "test_paths.hpp"

#include <algorithm>
#include <cmath>

namespace loader_test {

std::string fixture(const std::string& name) {
  return switchyard::test::fixture_dir() + "/" + name;
}

std::string fixture_file(const std::string& folder, const std::string& plugin) {
  return fixture(folder) + "/libswitchyard-" + plugin + ".so";
}

switchyard::RuntimeOptions isolated_options(std::vector<std::string> plugin_path,
                                            std::map<std::string, std::string> environment) {
  switchyard::RuntimeOptions options;
  options.plugin_path = std::move(plugin_path);
  environment.emplace("SWITCHYARD_PLUGIN_SYSTEM_PATH", fixture("empty"));
  options.environment = std::move(environment);
  return options;
}

HostTensor::HostTensor(std::vector<int64_t> shape, DLDataType dtype) : shape_(std::move(shape)) {
  bytes_.resize(static_cast<size_t>(elements()) * (dtype.bits / 8), 0);
  tensor_.data = bytes_.data();
  tensor_.device = DLDevice{kDLCPU, 0};
  tensor_.ndim = static_cast<int32_t>(shape_.size());
  tensor_.dtype = dtype;
  tensor_.shape = shape_.data();
  tensor_.strides = nullptr;
  tensor_.byte_offset = 0;
}

int64_t HostTensor::elements() const {
  int64_t n = 1;
  for (int64_t extent : shape_) n *= extent;
  return n;
}

sy_ce_problem ce_problem(int64_t rows, int64_t vocab) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = rows;
  p.vocab_local = vocab;
  p.vocab_start = 0;
  p.vocab_size = vocab;
  p.logits_dtype = DLDataType{kDLFloat, 32, 1};
  p.label_dtype = DLDataType{kDLInt, 64, 1};
  p.grad_dtype = DLDataType{kDLFloat, 32, 1};
  p.device = DLDevice{kDLCPU, 0};
  p.tp_size = 1;
  p.smoothing = SY_SMOOTHING_MEGATRON;
  p.ignore_index = -100;
  return p;
}

sy_norm_problem rms_problem(int64_t rows, int64_t hidden) {
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = SY_NORM_RMS;
  p.rows = rows;
  p.hidden = hidden;
  p.eps = 1e-5f;
  p.x_dtype = p.y_dtype = p.weight_dtype = p.grad_weight_dtype = DLDataType{kDLFloat, 32, 1};
  p.device = DLDevice{kDLCPU, 0};
  return p;
}

namespace {
uint32_t next(uint32_t& state) {
  state = state * 1664525u + 1013904223u;
  return state >> 8;
}
}  // namespace

void fill_logits(HostTensor& logits, uint32_t seed) {
  uint32_t state = seed;
  float* values = logits.as<float>();
  for (int64_t i = 0; i < logits.elements(); ++i)
    values[i] = static_cast<float>(next(state) % 6000) / 1000.0f - 3.0f;
}

void fill_labels(HostTensor& labels, int64_t vocab, uint32_t seed) {
  uint32_t state = seed;
  int64_t* values = labels.as<int64_t>();
  for (int64_t i = 0; i < labels.elements(); ++i)
    values[i] = static_cast<int64_t>(next(state) % static_cast<uint32_t>(vocab));
}

double reference_loss(const float* row, int64_t vocab, int64_t label) {
  double max = row[0];
  for (int64_t j = 1; j < vocab; ++j) max = std::max(max, static_cast<double>(row[j]));
  double sum = 0.0;
  for (int64_t j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(row[j]) - max);
  return max + std::log(sum) - row[label];
}

LogCapture::LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_)) {
  sink_->set_pattern("%l: %v");
  switchyard::detail::logger().sinks().push_back(sink_);
}

LogCapture::~LogCapture() {
  auto& sinks = switchyard::detail::logger().sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
}

int LogCapture::count(const std::string& needle) const {
  const std::string all = text();
  int n = 0;
  for (auto at = all.find(needle); at != std::string::npos; at = all.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace loader_test
