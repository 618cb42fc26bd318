#include "bench_error.hpp"
#include "device.hpp"
#include "stats.hpp"

namespace switchyard::bench {

CopyBandwidth measure_copy_bandwidth(Device& device, int64_t bytes, int reps) {
  DeviceBuffer src, dst;
  while (true) {
    try {
      src = device.allocate(bytes);
      dst = device.allocate(bytes);
      break;
    } catch (const BenchError&) {
      src.reset();
      dst.reset();
      if (bytes <= (int64_t{1} << 24)) throw;
      bytes /= 2;  // a smaller copy still runs at full bandwidth well above the cache size
    }
  }
  device.fill_async(src.data(), 0xA5, bytes);  // never time zeros
  const int warmup = 3;
  for (int i = 0; i < warmup; ++i) device.copy_async(dst.data(), src.data(), bytes);
  auto timer = device.make_timer(reps, 2);
  for (int rep = 0; rep < reps; ++rep) {
    timer->mark(rep, 0);
    device.copy_async(dst.data(), src.data(), bytes);
    timer->mark(rep, 1);
  }
  device.synchronize("the copy-bandwidth measurement");
  std::vector<double> ms;
  for (const auto& rep : timer->elapsed_ms()) ms.push_back(rep.at(0));

  CopyBandwidth result;
  result.bytes = bytes;
  result.reps = reps;
  result.median_ms = median(ms);
  result.gb_per_s = result.median_ms > 0 ? 2.0 * static_cast<double>(bytes) / (result.median_ms * 1e6) : 0;
  return result;
}

}  // namespace switchyard::bench
