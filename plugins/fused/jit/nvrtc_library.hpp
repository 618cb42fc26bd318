// NVRTC, opened at run time with dlopen: it is a 105 MB library that most processes loading
// the plugin never need (a warm kernel cache, or no GPU at all), and a machine without it must
// still load the plugin and hear from probe() why it cannot run.
#ifndef SWITCHYARD_FUSED_JIT_NVRTC_LIBRARY_HPP
#define SWITCHYARD_FUSED_JIT_NVRTC_LIBRARY_HPP

#include <nvrtc.h>  // types and signatures only: nothing here links libnvrtc

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace switchyard::fused::jit {

class NvrtcLibrary {
 public:
  // The library of this process, loaded on the first call. `path` (the plugin option
  // nvrtc_library) names the file to open; empty: the system's libnvrtc.so.13 (then .so.12)
  // by the dynamic loader's search, then the usual CUDA install folders. Returns nullptr
  // and the reason (every file tried and why it failed) when none loads; a later call tries
  // again (the library may have been installed, or the option changed).
  static std::shared_ptr<const NvrtcLibrary> load(const std::string& path, std::string* error);

  int major() const { return major_; }
  int minor() const { return minor_; }
  uint32_t version() const { return static_cast<uint32_t>(major_ * 1000 + minor_ * 10); }
  const std::string& path() const { return path_; }  // the file that was opened
  const std::vector<int>& supported_archs() const { return archs_; }  // 75, 80, ... 120

  // The entry points, resolved at load.
  decltype(&::nvrtcGetErrorString) get_error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create_program = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&::nvrtcCompileProgram) compile_program = nullptr;
  decltype(&::nvrtcGetProgramLogSize) get_program_log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) get_program_log = nullptr;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) get_cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) get_ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) get_ptx = nullptr;

  NvrtcLibrary(const NvrtcLibrary&) = delete;
  NvrtcLibrary& operator=(const NvrtcLibrary&) = delete;
  ~NvrtcLibrary();

 private:
  NvrtcLibrary() = default;
  static std::unique_ptr<NvrtcLibrary> open(const std::string& file, std::string* error);

  void* handle_ = nullptr;
  int major_ = 0, minor_ = 0;
  std::string path_;
  std::vector<int> archs_;
};

}  // namespace switchyard::fused::jit

#endif  // SWITCHYARD_FUSED_JIT_NVRTC_LIBRARY_HPP
