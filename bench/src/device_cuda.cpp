// One CUDA GPU as a benchmark device: a stream of its own (blocking with respect to the legacy
// default stream, so that a plugin that wrongly uses stream 0 is still ordered), CUDA events
// for timing, cudaMemGetInfo for memory growth. Only the CUDA runtime API; no kernels.
#include "bench_error.hpp"
#include "device.hpp"
#include "gpu_hold.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace switchyard::bench {
namespace {

void check(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess)
    throw BenchError(what + " failed: " + cudaGetErrorName(status) + ": " +
                     cudaGetErrorString(status));
}

class CudaTimer : public RepTimer {
 public:
  CudaTimer(int device, cudaStream_t stream, int reps, int marks)
      : device_(device), stream_(stream), marks_(marks),
        events_(static_cast<size_t>(reps) * marks, nullptr) {
    check(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
    for (auto& event : events_) check(cudaEventCreate(&event), "cudaEventCreate");
  }
  ~CudaTimer() override {
    for (auto event : events_)
      if (event != nullptr) cudaEventDestroy(event);
  }
  CudaTimer(const CudaTimer&) = delete;
  CudaTimer& operator=(const CudaTimer&) = delete;

  void mark(int rep, int index) override {
    check(cudaEventRecord(events_.at(static_cast<size_t>(rep) * marks_ + index), stream_),
          "cudaEventRecord");
  }
  std::vector<std::vector<double>> elapsed_ms() override {
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize before reading the events");
    std::vector<std::vector<double>> out(events_.size() / marks_);
    for (size_t rep = 0; rep < out.size(); ++rep)
      for (int k = 0; k + 1 < marks_; ++k) {
        float ms = 0;
        check(cudaEventElapsedTime(&ms, events_[rep * marks_ + k], events_[rep * marks_ + k + 1]),
              "cudaEventElapsedTime");
        out[rep].push_back(ms);
      }
    return out;
  }

 private:
  int device_;
  cudaStream_t stream_;
  int marks_;
  std::vector<cudaEvent_t> events_;
};

class CudaDevice : public Device {
 public:
  explicit CudaDevice(int index) : index_(index) {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0)
      throw BenchError(std::string("--device cuda: no usable CUDA device (") +
                       (status != cudaSuccess ? cudaGetErrorString(status) : "0 devices") +
                       "); run on the GPU machine, or use --device cpu");
    if (index < 0 || index >= count)
      throw BenchError("CUDA device " + std::to_string(index) + " does not exist; this process "
                       "sees " + std::to_string(count) + " device(s)");
    activate();
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cudaGetDeviceProperties(&properties_, index_), "cudaGetDeviceProperties");
  }
  ~CudaDevice() override {
    flush_buffer_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  DLDevice dl_device() const override { return DLDevice{kDLCUDA, index_}; }

  DeviceDescription describe() const override {
    DeviceDescription d;
    d.type = "cuda";
    d.index = index_;
    d.name = properties_.name;
    d.multiprocessors = properties_.multiProcessorCount;
    d.l2_bytes = properties_.l2CacheSize;
    d.memory_bytes = static_cast<int64_t>(properties_.totalGlobalMem);
    d.compute_capability = std::to_string(properties_.major) + "." + std::to_string(properties_.minor);
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    d.driver = "driver API " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) +
               ", runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
    return d;
  }

  void activate() override { check(cudaSetDevice(index_), "cudaSetDevice(" + std::to_string(index_) + ")"); }

  DeviceBuffer allocate(int64_t bytes) override {
    activate();
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    if (status != cudaSuccess) {
      cudaGetLastError();  // an allocation failure is not sticky: clear it for later checks
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      throw BenchError("cudaMalloc of " + std::to_string(bytes) + " bytes on GPU " +
                       std::to_string(index_) + " failed (" + cudaGetErrorString(status) + "; " +
                       std::to_string(free_bytes) + " of " + std::to_string(total) +
                       " bytes free); run fewer --cases at once or use --small");
    }
    const int index = index_;
    return DeviceBuffer(p, bytes, [index](void* q) {
      cudaSetDevice(index);
      cudaFree(q);
    });
  }

  void upload(void* dst, const void* src, int64_t bytes) override {
    activate();
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync host to device");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize after an upload");
  }
  void download(void* dst, const void* src, int64_t bytes) override {
    activate();
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync device to host");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize after a download");
  }
  void copy_async(void* dst, const void* src, int64_t bytes) override {
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpyAsync device to device");
  }
  void fill_async(void* dst, uint8_t byte, int64_t bytes) override {
    check(cudaMemsetAsync(dst, byte, static_cast<size_t>(bytes), stream_), "cudaMemsetAsync");
  }

  // Twice the L2 and at least 256 MiB, as triton.testing.do_bench does.
  int64_t cache_flush_bytes() const override {
    return std::max<int64_t>(int64_t{256} << 20, 2 * int64_t{properties_.l2CacheSize});
  }
  void flush_cache() override {
    if (flush_buffer_.data() == nullptr) flush_buffer_ = allocate(cache_flush_bytes());
    fill_async(flush_buffer_.data(), static_cast<uint8_t>(++flush_count_ | 1u), flush_buffer_.bytes());
  }

  void hold_stream(int microseconds, HoldKind kind) override {
    if (microseconds <= 0) return;
    if (kind == HoldKind::Gpu) {
      check(launch_gpu_hold(stream_, microseconds), "the stream hold's spin kernel");
      return;
    }
    hold_us_ = microseconds;
    check(cudaLaunchHostFunc(stream_, &CudaDevice::sleep_on_stream, &hold_us_), "cudaLaunchHostFunc");
  }

  void* stream() const override { return stream_; }

  void synchronize(const std::string& after_what) override {
    activate();
    check(cudaStreamSynchronize(stream_), "the GPU work of " + after_what);
    check(cudaGetLastError(), "the GPU work of " + after_what + " (cudaGetLastError)");
  }

  std::optional<int64_t> free_memory() override {
    activate();
    size_t free_bytes = 0, total = 0;
    check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
    return static_cast<int64_t>(free_bytes);
  }

  std::unique_ptr<RepTimer> make_timer(int reps, int marks) override {
    return std::make_unique<CudaTimer>(index_, stream_, reps, marks);
  }

 private:
  int index_;
  cudaStream_t stream_ = nullptr;
  cudaDeviceProp properties_{};
  DeviceBuffer flush_buffer_;
  unsigned flush_count_ = 0;
  int hold_us_ = 0;

  // Runs on a CUDA runtime thread when the stream reaches it; makes no CUDA call.
  static void CUDART_CB sleep_on_stream(void* microseconds) {
    std::this_thread::sleep_for(std::chrono::microseconds(*static_cast<const int*>(microseconds)));
  }
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(int index) { return std::make_unique<CudaDevice>(index); }

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace switchyard::bench
