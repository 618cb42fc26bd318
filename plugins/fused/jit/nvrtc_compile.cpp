#include "nvrtc_compile.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <algorithm>
#include <chrono>

namespace switchyard::fused::jit {
namespace {

std::string arch_text(int arch) { return std::to_string(arch / 10) + "." + std::to_string(arch % 10); }

// Deletes the program however compile() leaves.
class Program {
 public:
  Program(const NvrtcLibrary& nvrtc, const std::string& source, const std::string& name)
      : nvrtc_(nvrtc) {
    const nvrtcResult result =
        nvrtc_.create_program(&program_, source.c_str(), name.c_str(), 0, nullptr, nullptr);
    if (result != NVRTC_SUCCESS)
      sy::fail(SY_ERR_INTERNAL, "nvrtcCreateProgram failed for " + name + ": " +
                                    nvrtc_.get_error_string(result));
  }
  ~Program() {
    if (program_ != nullptr) nvrtc_.destroy_program(&program_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return program_; }

 private:
  const NvrtcLibrary& nvrtc_;
  nvrtcProgram program_ = nullptr;
};

std::string program_log(const NvrtcLibrary& nvrtc, nvrtcProgram program) {
  size_t size = 0;
  if (nvrtc.get_program_log_size(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (nvrtc.get_program_log(program, &log[0]) != NVRTC_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace

CompileTarget choose_target(const NvrtcLibrary& nvrtc, int device_arch) {
  CompileTarget target;
  target.device_arch = device_arch;
  const std::vector<int>& archs = nvrtc.supported_archs();
  if (std::find(archs.begin(), archs.end(), device_arch) != archs.end()) {
    target.code_arch = device_arch;
    target.kind = cache::PayloadKind::Cubin;
    target.options.push_back("--gpu-architecture=sm_" + std::to_string(device_arch));
  } else {
    // A GPU newer than this NVRTC: PTX of the newest architecture it knows below the GPU's,
    // which the driver compiles for the GPU when the module is loaded.
    int best = 0;
    for (int arch : archs)
      if (arch <= device_arch && arch > best) best = arch;
    if (best == 0)
      sy::fail(SY_ERR_UNAVAILABLE,
               "NVRTC " + std::to_string(nvrtc.major()) + "." + std::to_string(nvrtc.minor()) +
                   " (" + nvrtc.path() + ") compiles for compute capability " +
                   arch_text(archs.front()) + " to " + arch_text(archs.back()) +
                   "; this GPU is " + arch_text(device_arch) +
                   ". Use the NVRTC of a CUDA toolkit that supports it (plugin option "
                   "fused.nvrtc_library) or another backend");
    target.code_arch = best;
    target.kind = cache::PayloadKind::Ptx;
    target.options.push_back("--gpu-architecture=compute_" + std::to_string(best));
  }
  target.options.push_back("-std=c++17");
  target.options.push_back("--fmad=true");
  return target;
}

CompileOutput compile(const NvrtcLibrary& nvrtc, const std::string& source,
                      const std::string& program_name, const CompileTarget& target) {
  const auto start = std::chrono::steady_clock::now();
  Program program(nvrtc, source, program_name);
  std::vector<const char*> options;
  for (const std::string& option : target.options) options.push_back(option.c_str());
  const nvrtcResult result =
      nvrtc.compile_program(program.get(), static_cast<int>(options.size()), options.data());
  CompileOutput output;
  output.log = program_log(nvrtc, program.get());
  if (result != NVRTC_SUCCESS)
    sy::fail(SY_ERR_INTERNAL, "NVRTC could not compile the generated kernels " + program_name +
                                  " (" + nvrtc.get_error_string(result) +
                                  "); this is a bug in the fused plugin, please report it with "
                                  "this log:\n" + output.log);
  size_t size = 0;
  if (target.kind == cache::PayloadKind::Cubin) {
    if (nvrtc.get_cubin_size(program.get(), &size) != NVRTC_SUCCESS || size == 0)
      sy::fail(SY_ERR_INTERNAL, "NVRTC compiled " + program_name + " but returned no cubin");
    output.payload.resize(size);
    if (nvrtc.get_cubin(program.get(), &output.payload[0]) != NVRTC_SUCCESS)
      sy::fail(SY_ERR_INTERNAL, "nvrtcGetCUBIN failed for " + program_name);
  } else {
    if (nvrtc.get_ptx_size(program.get(), &size) != NVRTC_SUCCESS || size == 0)
      sy::fail(SY_ERR_INTERNAL, "NVRTC compiled " + program_name + " but returned no PTX");
    output.payload.resize(size);  // includes the terminating NUL the loader needs
    if (nvrtc.get_ptx(program.get(), &output.payload[0]) != NVRTC_SUCCESS)
      sy::fail(SY_ERR_INTERNAL, "nvrtcGetPTX failed for " + program_name);
  }
  output.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return output;
}

}  // namespace switchyard::fused::jit
