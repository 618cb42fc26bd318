// The host as a benchmark device: plugin calls on CPU tensors are synchronous, so a steady
// clock around them is the right timer.
#include "bench_error.hpp"
#include "device.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>

namespace switchyard::bench {
namespace {

using Clock = std::chrono::steady_clock;

class CpuTimer : public RepTimer {
 public:
  CpuTimer(int reps, int marks) : marks_(marks), points_(static_cast<size_t>(reps) * marks) {}
  void mark(int rep, int index) override { points_.at(static_cast<size_t>(rep) * marks_ + index) = Clock::now(); }
  std::vector<std::vector<double>> elapsed_ms() override {
    std::vector<std::vector<double>> out(points_.size() / marks_);
    for (size_t rep = 0; rep < out.size(); ++rep)
      for (int k = 0; k + 1 < marks_; ++k)
        out[rep].push_back(std::chrono::duration<double, std::milli>(
                               points_[rep * marks_ + k + 1] - points_[rep * marks_ + k])
                               .count());
    return out;
  }

 private:
  int marks_;
  std::vector<Clock::time_point> points_;
};

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "host CPU";
}

class CpuDevice : public Device {
 public:
  DLDevice dl_device() const override { return DLDevice{kDLCPU, 0}; }
  DeviceDescription describe() const override {
    DeviceDescription d;
    d.type = "cpu";
    d.name = cpu_model();
    d.multiprocessors = static_cast<int>(std::thread::hardware_concurrency());
    return d;
  }
  void activate() override {}
  DeviceBuffer allocate(int64_t bytes) override {
    // 64-byte aligned, rounded up to a whole alignment unit as aligned_alloc requires.
    const size_t size = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
    void* p = std::aligned_alloc(64, size);
    if (p == nullptr)
      throw BenchError("allocating " + std::to_string(bytes) +
                       " bytes of host memory failed; use --small or fewer --cases");
    return DeviceBuffer(p, bytes, [](void* q) { std::free(q); });
  }
  void upload(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void download(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void copy_async(void* dst, const void* src, int64_t bytes) override {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
  }
  void fill_async(void* dst, uint8_t byte, int64_t bytes) override {
    std::memset(dst, byte, static_cast<size_t>(bytes));
  }
  void flush_cache() override {}
  void hold_stream(int, HoldKind) override {}
  int64_t cache_flush_bytes() const override { return 0; }
  void* stream() const override { return nullptr; }
  void synchronize(const std::string&) override {}
  std::optional<int64_t> free_memory() override { return std::nullopt; }
  std::unique_ptr<RepTimer> make_timer(int reps, int marks) override {
    return std::make_unique<CpuTimer>(reps, marks);
  }
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

#ifndef SWITCHYARD_BENCH_HAVE_CUDA
std::unique_ptr<Device> make_cuda_device(int) {
  throw BenchError(
      "--device cuda: this switchyard-bench was built without CUDA (no CUDA toolkit at configure "
      "time); rebuild with the CUDA toolkit, or use --device cpu");
}
int cuda_device_count() { return 0; }
#endif

}  // namespace switchyard::bench
