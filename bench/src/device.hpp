// Where the benchmark's tensors live and how it times them: the host (std::chrono around
// synchronous calls) or one CUDA GPU (events on the benchmark's stream). Everything the
// benchmark does on a device goes through this interface, so the runners are device-blind.
#ifndef SWITCHYARD_BENCH_DEVICE_HPP
#define SWITCHYARD_BENCH_DEVICE_HPP

#include <dlpack/dlpack.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::bench {

// How a CUDA stream is held before a timed repetition: a single-thread kernel spinning on the
// GPU timer (the default, as peers.py's torch.cuda._sleep), or a host function that sleeps
// (cudaLaunchHostFunc; the first timed phase then also waits for the device to learn that the
// host function returned).
enum class HoldKind { Gpu, Host };


// Device memory owned by the benchmark. Move-only; freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(void* data, int64_t bytes, std::function<void(void*)> release)
      : data_(data), bytes_(bytes), release_(std::move(release)) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      std::swap(data_, other.data_);
      std::swap(bytes_, other.bytes_);
      std::swap(release_, other.release_);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  void reset() {
    if (data_ != nullptr && release_) release_(data_);
    data_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* data_ = nullptr;
  int64_t bytes_ = 0;
  std::function<void(void*)> release_;
};

// Marks points in the device's work order, `marks` per repetition, and reports the time
// between consecutive marks of each repetition once all of them have completed.
class RepTimer {
 public:
  virtual ~RepTimer() = default;
  virtual void mark(int rep, int index) = 0;
  // [rep][segment] in milliseconds, segment k = mark k -> mark k+1. Waits for the device.
  virtual std::vector<std::vector<double>> elapsed_ms() = 0;
};

struct DeviceDescription {
  std::string type;  // "cuda" | "cpu"
  int index = 0;
  std::string name;  // "NVIDIA H200", or the host's CPU model
  int multiprocessors = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  std::string compute_capability;  // "9.0"; empty on the CPU
  std::string driver;              // CUDA driver/runtime versions; empty on the CPU
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DLDevice dl_device() const = 0;
  virtual DeviceDescription describe() const = 0;
  // Makes this device current for the calling thread (cudaSetDevice); no-op on the CPU.
  virtual void activate() = 0;
  // Throws BenchError naming the size, the free memory and the case when allocation fails.
  virtual DeviceBuffer allocate(int64_t bytes) = 0;
  // Synchronous transfers between the host and device memory (ordered after queued work).
  virtual void upload(void* device_dst, const void* host_src, int64_t bytes) = 0;
  virtual void download(void* host_dst, const void* device_src, int64_t bytes) = 0;
  // Queued on the benchmark's stream (immediate on the CPU).
  virtual void copy_async(void* dst, const void* src, int64_t bytes) = 0;
  virtual void fill_async(void* dst, uint8_t byte, int64_t bytes) = 0;
  // Evicts the tensors of the previous repetition from the last-level cache (a write over a
  // scratch buffer larger than the cache). No-op on the CPU.
  virtual void flush_cache() = 0;
  virtual int64_t cache_flush_bytes() const = 0;
  // Holds the stream for `microseconds`, so that the host queues a whole repetition before the
  // device reaches its first mark: the events then time the device's work alone, not the
  // host's launch overhead. No-op on the CPU.
  virtual void hold_stream(int microseconds, HoldKind kind) = 0;
  // The stream handed to plugins (cudaStream_t), or nullptr on the CPU.
  virtual void* stream() const = 0;
  // Waits for queued work; throws BenchError with the device's error if any work failed.
  virtual void synchronize(const std::string& after_what) = 0;
  // Free device memory now, or nothing where it cannot be measured (the CPU).
  virtual std::optional<int64_t> free_memory() = 0;
  virtual std::unique_ptr<RepTimer> make_timer(int reps, int marks) = 0;
};

std::unique_ptr<Device> make_cpu_device();
// Throws BenchError when this build has no CUDA or there is no such GPU.
std::unique_ptr<Device> make_cuda_device(int index);
// Number of CUDA devices visible to this process; 0 without CUDA (never throws).
int cuda_device_count();

struct CopyBandwidth {
  int64_t bytes = 0;      // size of one buffer; a copy reads and writes it (2 x bytes moved)
  double median_ms = 0;
  double gb_per_s = 0;    // 2 * bytes / median time, in 1e9 bytes per second
  int reps = 0;
};

// Measures a large device-to-device copy (host memcpy on the CPU), median over `reps` after
// warm-up. Halves the size until the buffers fit. The floors of every case divide by it.
CopyBandwidth measure_copy_bandwidth(Device& device, int64_t bytes, int reps);

}  // namespace switchyard::bench

#endif
