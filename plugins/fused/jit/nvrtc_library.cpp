#include "nvrtc_library.hpp"

#include <dlfcn.h>

#include <mutex>

namespace switchyard::fused::jit {
namespace {

// Tried in order when no file is named: the dynamic loader's search first (LD_LIBRARY_PATH,
// ld.so.cache), then where CUDA toolkits usually live. NVRTC 12 compiles for every
// architecture this plugin targets as well, and its cubins run on newer drivers.
const char* const kCandidates[] = {
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "/usr/local/cuda/lib64/libnvrtc.so.13",
    "/usr/local/cuda/lib/libnvrtc.so.13",
    "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.13",
    "/usr/local/cuda/lib64/libnvrtc.so.12",
};

template <class Fn>
bool resolve(void* handle, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*out == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *out != nullptr;
}

std::mutex& load_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

NvrtcLibrary::~NvrtcLibrary() {
  // Never dlclose'd: NVRTC keeps thread-local state and atexit handlers; the process (or the
  // plugin's unload) ends its life.
}

std::unique_ptr<NvrtcLibrary> NvrtcLibrary::open(const std::string& file, std::string* error) {
  // RTLD_LAZY: binding its ~200 000 relocations eagerly costs milliseconds a warm start
  // does not have.
  void* handle = dlopen(file.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = why != nullptr ? why : file + ": cannot be opened";
    return nullptr;
  }
  std::unique_ptr<NvrtcLibrary> library(new NvrtcLibrary());
  library->handle_ = handle;
  std::string missing;
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) count_archs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) get_archs = nullptr;
  resolve(handle, "nvrtcVersion", &version, &missing);
  resolve(handle, "nvrtcGetNumSupportedArchs", &count_archs, &missing);
  resolve(handle, "nvrtcGetSupportedArchs", &get_archs, &missing);
  resolve(handle, "nvrtcGetErrorString", &library->get_error_string, &missing);
  resolve(handle, "nvrtcCreateProgram", &library->create_program, &missing);
  resolve(handle, "nvrtcDestroyProgram", &library->destroy_program, &missing);
  resolve(handle, "nvrtcCompileProgram", &library->compile_program, &missing);
  resolve(handle, "nvrtcGetProgramLogSize", &library->get_program_log_size, &missing);
  resolve(handle, "nvrtcGetProgramLog", &library->get_program_log, &missing);
  resolve(handle, "nvrtcGetCUBINSize", &library->get_cubin_size, &missing);
  resolve(handle, "nvrtcGetCUBIN", &library->get_cubin, &missing);
  resolve(handle, "nvrtcGetPTXSize", &library->get_ptx_size, &missing);
  resolve(handle, "nvrtcGetPTX", &library->get_ptx, &missing);
  if (!missing.empty()) {
    *error = file + " lacks " + missing + " (NVRTC 11.1 or newer is needed)";
    return nullptr;  // handle stays open: harmless, and dlclose of NVRTC is not safe
  }
  if (version(&library->major_, &library->minor_) != NVRTC_SUCCESS) {
    *error = file + ": nvrtcVersion failed";
    return nullptr;
  }
  int count = 0;
  if (count_archs(&count) == NVRTC_SUCCESS && count > 0) {
    library->archs_.resize(static_cast<size_t>(count));
    if (get_archs(library->archs_.data()) != NVRTC_SUCCESS) library->archs_.clear();
  }
  if (library->archs_.empty()) {
    *error = file + ": nvrtcGetSupportedArchs returned no architecture";
    return nullptr;
  }
  Dl_info info{};
  library->path_ = dladdr(reinterpret_cast<void*>(version), &info) != 0 && info.dli_fname != nullptr
                       ? info.dli_fname
                       : file;
  return library;
}

std::shared_ptr<const NvrtcLibrary> NvrtcLibrary::load(const std::string& path, std::string* error) {
  std::lock_guard<std::mutex> lock(load_mutex());
  // One library per process and per requested path: switching the option in a running
  // process opens the other file, but never unloads one that kernels came from.
  static std::vector<std::pair<std::string, std::shared_ptr<const NvrtcLibrary>>> loaded;
  for (const auto& [requested, library] : loaded)
    if (requested == path) return library;
  std::string reasons;
  const auto attempt = [&](const std::string& file) -> std::shared_ptr<const NvrtcLibrary> {
    std::string why;
    std::unique_ptr<NvrtcLibrary> library = open(file, &why);
    if (library) return std::shared_ptr<const NvrtcLibrary>(std::move(library));
    reasons += (reasons.empty() ? "" : "; ") + why;
    return nullptr;
  };
  std::shared_ptr<const NvrtcLibrary> library;
  if (!path.empty()) {
    library = attempt(path);
  } else {
    for (const char* candidate : kCandidates)
      if ((library = attempt(candidate))) break;
  }
  if (!library) {
    if (error != nullptr)
      *error = "NVRTC (the CUDA runtime compiler) could not be loaded: " + reasons +
               (path.empty() ? "; install the CUDA toolkit's NVRTC (libnvrtc.so.13) or name the "
                               "file with the plugin option fused.nvrtc_library"
                             : "; fix the plugin option fused.nvrtc_library");
    return nullptr;
  }
  loaded.emplace_back(path, library);
  return library;
}

}  // namespace switchyard::fused::jit
