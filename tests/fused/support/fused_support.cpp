#include "support/fused_support.hpp"

#include <switchyard/float16.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace switchyard::fused::test {

// ---- files ----------------------------------------------------------------------------------

std::vector<std::string> files_in(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// ---- HostTensor -----------------------------------------------------------------------------

HostTensor::HostTensor(DLDataType dtype, std::vector<int64_t> shape, int64_t row_stride,
                       int64_t misalign_bytes, DLDevice device)
    : shape_(std::move(shape)) {
  element_bytes_ = (dtype.bits * dtype.lanes + 7) / 8;
  const int64_t columns = shape_.size() == 2 ? shape_[1] : 1;
  const int64_t stride = shape_.size() == 2 ? (row_stride > 0 ? row_stride : columns) : 1;
  const int64_t elements = shape_[0] == 0 ? 0 : (shape_[0] - 1) * stride + columns;
  storage_bytes_ = static_cast<size_t>(elements * element_bytes_ + misalign_bytes + 64);
  storage_ = std::make_unique<unsigned char[]>(storage_bytes_);
  std::memset(storage_.get(), 0, storage_bytes_);
  // new[] of this size is 16-byte aligned; the offset makes it (mis)aligned on purpose.
  const auto base = reinterpret_cast<uintptr_t>(storage_.get());
  const uintptr_t aligned = (base + 15) / 16 * 16;
  tensor_.data = reinterpret_cast<void*>(aligned);
  tensor_.byte_offset = static_cast<uint64_t>(misalign_bytes);
  tensor_.device = device;
  tensor_.dtype = dtype;
  tensor_.ndim = static_cast<int>(shape_.size());
  tensor_.shape = shape_.data();
  if (shape_.size() == 2) {
    strides_[0] = stride;
    strides_[1] = 1;
    tensor_.strides = row_stride > 0 ? strides_ : nullptr;
  } else {
    tensor_.strides = nullptr;
  }
}

unsigned char* HostTensor::element(int64_t i, int64_t j) const {
  const int64_t stride = shape_.size() == 2 ? (tensor_.strides ? strides_[0] : shape_[1]) : 1;
  return static_cast<unsigned char*>(tensor_.data) + tensor_.byte_offset +
         (i * stride + j) * element_bytes_;
}

double HostTensor::at(int64_t i, int64_t j) const {
  const unsigned char* p = element(i, j);
  const DLDataType t = tensor_.dtype;
  if (t.code == kDLFloat && t.bits == 32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (t.code == kDLFloat && t.bits == 64) {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  if ((t.code == kDLFloat || t.code == kDLBfloat) && t.bits == 16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return t.code == kDLBfloat ? sy::bf16_to_float(h) : sy::f16_to_float(h);
  }
  if (t.code == kDLInt && t.bits == 64) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  if (t.code == kDLInt && t.bits == 32) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  throw std::logic_error("HostTensor::at: unsupported dtype");
}

void HostTensor::set(int64_t i, int64_t j, double value) {
  unsigned char* p = element(i, j);
  const DLDataType t = tensor_.dtype;
  if (t.code == kDLFloat && t.bits == 32) {
    const float v = static_cast<float>(value);
    std::memcpy(p, &v, 4);
  } else if ((t.code == kDLFloat || t.code == kDLBfloat) && t.bits == 16) {
    const float f = static_cast<float>(value);
    const uint16_t h = t.code == kDLBfloat ? sy::float_to_bf16(f) : sy::float_to_f16(f);
    std::memcpy(p, &h, 2);
  } else if (t.code == kDLInt && t.bits == 64) {
    const auto v = static_cast<int64_t>(value);
    std::memcpy(p, &v, 8);
  } else if (t.code == kDLInt && t.bits == 32) {
    const auto v = static_cast<int32_t>(value);
    std::memcpy(p, &v, 4);
  } else {
    throw std::logic_error("HostTensor::set: unsupported dtype");
  }
}

std::vector<double> HostTensor::values() const {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(size()));
  for (int64_t i = 0; i < rows(); ++i)
    for (int64_t j = 0; j < columns(); ++j) out.push_back(at(i, j));
  return out;
}

void HostTensor::fill_all(double value) {
  for (int64_t i = 0; i < rows(); ++i)
    for (int64_t j = 0; j < columns(); ++j) set(i, j, value);
}

std::vector<unsigned char> HostTensor::element_bytes() const {
  std::vector<unsigned char> out;
  for (int64_t i = 0; i < rows(); ++i)
    for (int64_t j = 0; j < columns(); ++j) {
      const unsigned char* p = element(i, j);
      out.insert(out.end(), p, p + element_bytes_);
    }
  return out;
}

void HostTensor::poison(unsigned char byte) { std::memset(storage_.get(), byte, storage_bytes_); }

unsigned char* HostTensor::padding_byte(int64_t row) {
  if (shape_.size() != 2 || tensor_.strides == nullptr || strides_[0] == shape_[1]) return nullptr;
  return element(row, shape_[1]);
}

// ---- FakeHost -------------------------------------------------------------------------------

namespace {

// sy_host's callbacks are plain functions; one FakeHost is active at a time per process.
struct FakeHostState {
  std::mutex mutex;
  std::map<std::string, std::string> options;
  std::vector<std::string> log;
  std::map<std::string, std::string> interned;
};

FakeHostState& fake_state() {
  static FakeHostState state;
  return state;
}

void fake_log(sy_log_level level, const char* plugin, const char* message) {
  static const char* names[] = {"trace", "debug", "info", "warn", "error"};
  FakeHostState& s = fake_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.log.push_back(std::string(names[level >= 0 && level <= 4 ? level : 4]) + " [" +
                  (plugin ? plugin : "?") + "] " + (message ? message : ""));
}

const char* fake_option(const char* plugin, const char* key) {
  FakeHostState& s = fake_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (const std::string& prefix : {std::string(plugin), std::string("*")}) {
    const auto found = s.options.find(prefix + "." + key);
    if (found != s.options.end()) return found->second.c_str();
  }
  return nullptr;
}

}  // namespace

FakeHost::FakeHost(std::map<std::string, std::string> options) {
  FakeHostState& s = fake_state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.options = std::move(options);
    s.log.clear();
  }
  host_.struct_size = sizeof host_;
  host_.abi_major = SY_ABI_MAJOR;
  host_.abi_minor = SY_ABI_MINOR;
  host_.host_version = "test";
  host_.log = fake_log;
  host_.option = fake_option;
}

FakeHost::~FakeHost() = default;

std::vector<std::string> FakeHost::log() const {
  FakeHostState& s = fake_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.log;
}

std::string FakeHost::log_text() const {
  std::string text;
  for (const auto& line : log()) text += line + "\n";
  return text;
}

void FakeHost::set_option(const std::string& key, const std::string& value) {
  FakeHostState& s = fake_state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.options[key] = value;
}

// ---- processes ------------------------------------------------------------------------------

ProcessResult run_program(const std::string& program, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& environment) {
  std::vector<std::string> env_strings;
  const char* path = std::getenv("PATH");
  env_strings.push_back(std::string("PATH=") + (path ? path : "/usr/bin:/bin"));
  for (const auto& [key, value] : environment) env_strings.push_back(key + "=" + value);
  return switchyard::test::run_process(program, args, env_strings, std::chrono::seconds(120));
}

}  // namespace switchyard::fused::test
