// switchyard-fused-startup: how long the fused plugin's JIT takes to get its kernels ready,
// cold (empty cache: NVRTC compiles) and warm (a new process with the cache on disk), on the
// GPU it runs on. Each phase runs in a fresh process, so the warm phase pays what a new
// training job pays; the CUDA context is created before the clock starts (the plugin's caller
// has one anyway). Prints one JSON object.
//
//   switchyard-fused-startup [--device N] [--cache-dir DIR] [--keep] [--no-gpu [--arch 90]]
//
// --no-gpu measures what needs no device (source generation, NVRTC, the disk cache) for the
// architecture given, with modules "loaded" by a stand-in: the host's share of the start-up.
//
// Targets (PERFORMANCE.md): first compile <= 2000 ms, warm start <= 20 ms per module.
#include "cuda_device.hpp"
#include "jit/ce_source.hpp"
#include "jit/engine.hpp"
#include "jit/norm_source.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace switchyard::fused;

std::vector<jit::ModuleRequest> requests() {
  std::vector<jit::ModuleRequest> out;
  auto ce = [&](jit::DType logits, int64_t vp, bool smoothing, bool argmax) {
    jit::CeSpecialization s;
    s.logits = s.grad = logits;
    s.vocab_local = vp;
    s.smoothing = smoothing;
    s.argmax = argmax;
    out.push_back({s.description(), jit::ce_source(s), jit::ce_kernel_names()});
  };
  auto norm = [&](jit::NormKind kind, int64_t h) {
    jit::NormSpecialization s;
    s.kind = kind;
    s.hidden = h;
    s.x = s.y = s.weight = jit::DType::BF16;
    s.grad_weight = jit::DType::F32;
    out.push_back({s.description(), jit::norm_source(s), jit::norm_kernel_names()});
  };
  ce(jit::DType::BF16, 131072, false, false);  // TP1 [2048, 131072] of PERFORMANCE.md
  ce(jit::DType::BF16, 65536, true, true);     // TP2 with smoothing and argmax
  norm(jit::NormKind::Rms, 4096);
  norm(jit::NormKind::Layer, 8192);
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// Stands in for the CUDA loader with --no-gpu.
class NoLoader final : public jit::ModuleLoader {
 public:
  std::shared_ptr<const jit::LoadedModule> load(std::string_view, jit::cache::PayloadKind,
                                                const std::vector<std::string>& names) override {
    auto module = std::make_shared<jit::LoadedModule>();
    module->kernels.assign(names.size(), nullptr);
    return module;
  }
};

// One phase in this process: every request through a fresh engine; one JSON array.
int run_phase(int device, const std::string& cache_dir, int no_gpu_arch) {
  cuda::CudaModuleLoader cuda_loader;
  NoLoader no_loader;
  jit::ModuleLoader& loader = no_gpu_arch > 0 ? static_cast<jit::ModuleLoader&>(no_loader) : cuda_loader;
  std::vector<std::string> lines;
  jit::Engine engine(loader, [&](sy_log_level level, const std::string& message) {
    if (level >= SY_LOG_INFO) lines.push_back(message);
  });
  try {
    cuda::DeviceInfo info;
    std::unique_ptr<cuda::DeviceScope> scope;
    if (no_gpu_arch > 0) {
      info.arch = no_gpu_arch;
    } else {
      info = cuda::device_info(device);
      scope = std::make_unique<cuda::DeviceScope>(device);
      if (cudaFree(nullptr) != cudaSuccess) throw std::runtime_error("cannot create a CUDA context");
    }
    jit::CacheSettings settings;
    settings.folder = cache_dir;
    std::cout << "{\"arch\": " << info.arch << ", \"driver\": " << info.driver_version
              << ", \"modules\": [";
    bool first = true;
    for (const jit::ModuleRequest& request : requests()) {
      const auto start = std::chrono::steady_clock::now();
      const auto module = engine.module(request, {info.arch, info.driver_version}, settings);
      for (const void* kernel : module->kernels) {  // lazy loading: make the load happen now
        if (no_gpu_arch > 0) break;
        cudaFuncAttributes attributes{};
        if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess)
          throw std::runtime_error("cudaFuncGetAttributes failed for " + request.description);
      }
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      const jit::EngineStats stats = engine.stats();
      std::cout << (first ? "" : ", ") << "{\"module\": " << json_string(request.description)
                << ", \"ready_ms\": " << ms << ", \"nvrtc_ms\": " << stats.last_compile_ms
                << ", \"compiles\": " << stats.compiles << ", \"disk_hits\": " << stats.disk_hits << "}";
      first = false;
    }
    std::cout << "], \"log\": [";
    for (size_t i = 0; i < lines.size(); ++i) std::cout << (i ? ", " : "") << json_string(lines[i]);
    std::cout << "]}\n";
    return 0;
  } catch (const std::exception& e) {
    std::cout << "{\"error\": " << json_string(e.what()) << "}\n";
    return 1;
  }
}

// Runs this program again with --phase, returns its stdout.
std::string run_child(int device, const std::string& cache_dir, int no_gpu_arch, int* status) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    close(pipe_fds[0]);
    const std::string device_text = std::to_string(device), arch_text = std::to_string(no_gpu_arch);
    execl("/proc/self/exe", "switchyard-fused-startup", "--phase", "--device", device_text.c_str(),
          "--cache-dir", cache_dir.c_str(), "--arch", arch_text.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t got; (got = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(got));
  close(pipe_fds[0]);
  waitpid(pid, status, 0);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out.empty() ? "{\"error\": \"the phase printed nothing\"}" : out;
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  int no_gpu_arch = 0;  // > 0: --no-gpu
  bool no_gpu = false;
  std::string cache_dir;
  bool phase = false, keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--phase") phase = true;
    else if (arg == "--keep") keep = true;
    else if (arg == "--device" && i + 1 < argc) device = std::atoi(argv[++i]);
    else if (arg == "--cache-dir" && i + 1 < argc) cache_dir = argv[++i];
    else if (arg == "--no-gpu") no_gpu = true;
    else if (arg == "--arch" && i + 1 < argc) no_gpu_arch = std::atoi(argv[++i]);
    else {
      std::cerr << "usage: switchyard-fused-startup [--device N] [--cache-dir DIR] [--keep] "
                   "[--no-gpu [--arch 90]]\n";
      return 2;
    }
  }
  if (no_gpu && no_gpu_arch == 0) no_gpu_arch = 90;
  if (!no_gpu && !phase) no_gpu_arch = 0;
  if (phase) return run_phase(device, cache_dir, no_gpu_arch);

  const bool own_folder = cache_dir.empty();
  if (own_folder) {
    char pattern[] = "/tmp/switchyard-fused-startup-XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      std::cerr << "switchyard-fused-startup: cannot create a temporary folder\n";
      return 1;
    }
    cache_dir = pattern;
  } else {
    // A cold start needs an empty cache.
    switchyard::fused::jit::cache::clear_folder(cache_dir);
  }
  int cold_status = 0, warm_status = 0;
  const std::string cold = run_child(device, cache_dir, no_gpu_arch, &cold_status);
  const std::string warm = run_child(device, cache_dir, no_gpu_arch, &warm_status);
  std::cout << "{\"tool\": \"switchyard-fused-startup\", \"device\": "
            << (no_gpu_arch > 0 ? "\"none (--no-gpu)\"" : std::to_string(device))
            << ", \"cache_dir\": " << json_string(cache_dir)
            << ", \"targets_ms\": {\"first_compile\": 2000, \"warm_start\": 20}"
            << ",\n \"cold\": " << cold << ",\n \"warm\": " << warm << "}\n";
  if (own_folder && !keep) std::filesystem::remove_all(cache_dir);
  return cold_status == 0 && warm_status == 0 ? 0 : 1;
}
