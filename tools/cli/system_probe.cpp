// CUDA and NCCL probes through dlopen, run in a child process that reports back over a pipe.
#include "system_probe.hpp"

#include "child_process.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <map>
#include <sstream>

namespace switchyard::cli {

namespace {

// ---- in the child: facts as "key=value" lines ---------------------------------------------

// The driver API's C signatures (cuda.h is not included: the CLI must build and run where
// only these entry points, found at run time, say whether CUDA works).
using CUresult = int;
using CUdevice = int;
using cuInit_t = CUresult (*)(unsigned int);
using cuDriverGetVersion_t = CUresult (*)(int*);
using cuDeviceGetCount_t = CUresult (*)(int*);
using cuDeviceGet_t = CUresult (*)(CUdevice*, int);
using cuDeviceGetName_t = CUresult (*)(char*, int, CUdevice);
using cuDeviceGetAttribute_t = CUresult (*)(int*, int, CUdevice);
using cuDeviceTotalMem_t = CUresult (*)(size_t*, CUdevice);
using cuGetErrorName_t = CUresult (*)(CUresult, const char**);
using cuGetErrorString_t = CUresult (*)(CUresult, const char**);
using cudaRuntimeGetVersion_t = int (*)(int*);
using ncclGetVersion_t = int (*)(int*);

constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

class Facts {
 public:
  void add(const std::string& key, const std::string& value) {
    std::string clean = value;
    for (char& c : clean)
      if (c == '\n' || c == '\r') c = ' ';
    text_ += key + "=" + clean + "\n";
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

std::string dl_error() {
  const char* error = ::dlerror();
  return error ? error : "unknown dlopen error";
}

template <class Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(::dlsym(library, name));
}

std::string cuda_version_text(int version) {  // 13000 -> "13.0"
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string cu_error_text(void* driver, CUresult result) {
  const char* name = nullptr;
  const char* description = nullptr;
  if (auto get_name = symbol<cuGetErrorName_t>(driver, "cuGetErrorName")) get_name(result, &name);
  if (auto get_string = symbol<cuGetErrorString_t>(driver, "cuGetErrorString"))
    get_string(result, &description);
  std::string text = name ? name : "CUresult " + std::to_string(result);
  if (description) text += std::string(" (") + description + ")";
  return text;
}

void probe_cuda_driver(Facts& facts) {
  const char* library_name = "libcuda.so.1";
  facts.add("driver.library", library_name);
  void* driver = ::dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    facts.add("driver.error", "the CUDA driver library " + std::string(library_name) +
                                  " could not be loaded: " + dl_error() +
                                  " (no NVIDIA driver installed, or not visible in this "
                                  "container)");
    return;
  }
  auto cu_init = symbol<cuInit_t>(driver, "cuInit");
  auto get_version = symbol<cuDriverGetVersion_t>(driver, "cuDriverGetVersion");
  auto get_count = symbol<cuDeviceGetCount_t>(driver, "cuDeviceGetCount");
  auto get_device = symbol<cuDeviceGet_t>(driver, "cuDeviceGet");
  auto get_name = symbol<cuDeviceGetName_t>(driver, "cuDeviceGetName");
  auto get_attribute = symbol<cuDeviceGetAttribute_t>(driver, "cuDeviceGetAttribute");
  auto total_memory = symbol<cuDeviceTotalMem_t>(driver, "cuDeviceTotalMem_v2");
  if (!cu_init || !get_version || !get_count || !get_device || !get_name) {
    facts.add("driver.error", std::string(library_name) +
                                  " lacks cuInit/cuDriverGetVersion/cuDeviceGetCount/cuDeviceGet/"
                                  "cuDeviceGetName (not a CUDA driver, or a broken stub)");
    return;
  }
  int version = 0;
  if (get_version(&version) == 0) facts.add("driver.version", cuda_version_text(version));
  const CUresult init = cu_init(0);
  if (init != 0) {
    facts.add("driver.error", "cuInit(0) failed: " + cu_error_text(driver, init));
    return;
  }
  int count = 0;
  const CUresult counted = get_count(&count);
  if (counted != 0) {
    facts.add("driver.error", "cuDeviceGetCount failed: " + cu_error_text(driver, counted));
    return;
  }
  facts.add("device.count", std::to_string(count));
  for (int i = 0; i < count; ++i) {
    CUdevice device = 0;
    if (get_device(&device, i) != 0) continue;
    char name[256] = {};
    get_name(name, sizeof name, device);
    const std::string prefix = "device." + std::to_string(i) + ".";
    facts.add(prefix + "name", name);
    int major = 0, minor = 0;
    if (get_attribute && get_attribute(&major, kComputeCapabilityMajor, device) == 0 &&
        get_attribute(&minor, kComputeCapabilityMinor, device) == 0)
      facts.add(prefix + "cc", std::to_string(major) + "." + std::to_string(minor));
    size_t bytes = 0;
    if (total_memory && total_memory(&bytes, device) == 0)
      facts.add(prefix + "memory", std::to_string(bytes));
  }
}

void probe_cuda_runtime(Facts& facts) {
  const char* candidates[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12"};
  std::string tried;
  for (const char* library_name : candidates) {
    void* runtime = ::dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
    if (!runtime) {
      tried += (tried.empty() ? "" : "; ") + dl_error();
      continue;
    }
    facts.add("runtime.library", library_name);
    auto get_version = symbol<cudaRuntimeGetVersion_t>(runtime, "cudaRuntimeGetVersion");
    int version = 0;
    if (!get_version) {
      facts.add("runtime.error", std::string(library_name) + " has no cudaRuntimeGetVersion");
    } else if (const int status = get_version(&version); status != 0) {
      facts.add("runtime.error", "cudaRuntimeGetVersion failed with cudaError " +
                                     std::to_string(status));
    } else {
      facts.add("runtime.version", cuda_version_text(version));
    }
    return;
  }
  facts.add("runtime.error", "no CUDA runtime library could be loaded: " + tried);
}

void probe_nccl(Facts& facts) {
  const char* library_name = "libnccl.so.2";
  facts.add("nccl.library", library_name);
  void* nccl = ::dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
  if (!nccl) {
    facts.add("nccl.error", std::string(library_name) + " could not be loaded: " + dl_error());
    return;
  }
  auto get_version = symbol<ncclGetVersion_t>(nccl, "ncclGetVersion");
  int code = 0;
  if (!get_version) {
    facts.add("nccl.error", std::string(library_name) + " has no ncclGetVersion");
    return;
  }
  if (const int status = get_version(&code); status != 0) {
    facts.add("nccl.error", "ncclGetVersion failed with ncclResult " + std::to_string(status));
    return;
  }
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + ... before.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  facts.add("nccl.version", std::to_string(major) + "." + std::to_string(minor) + "." +
                                std::to_string(code % 100));
}

// ---- in the parent ------------------------------------------------------------------------

std::map<std::string, std::string> parse_facts(const std::string& text) {
  std::map<std::string, std::string> facts;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto equals = line.find('=');
    if (equals != std::string::npos) facts[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return facts;
}

// Runs the probes in a child; returns what it wrote, and in `failure` why it did not finish.
std::string run_probes_in_child(int timeout_seconds, std::string& failure) {
  const ChildResult child = run_in_child(
      [] {
        Facts facts;
        probe_cuda_driver(facts);
        probe_cuda_runtime(facts);
        probe_nccl(facts);
        facts.add("done", "1");
        return facts.text();
      },
      std::chrono::seconds(timeout_seconds));
  if (!child.error.empty())
    failure = "the CUDA/NCCL probe did not run: " + child.error;
  else if (child.timed_out)
    failure = "the CUDA/NCCL probe did not finish within " + std::to_string(timeout_seconds) +
              " s and was killed (a hung driver?)";
  else if (child.signal != 0)
    failure = "the CUDA/NCCL probe crashed (" + signal_text(child.signal) +
              ") while talking to the driver";
  return child.output;
}

}  // namespace

SystemReport probe_system(int timeout_seconds) {
  std::string failure;
  const auto facts = parse_facts(run_probes_in_child(timeout_seconds, failure));
  auto get = [&](const std::string& key) {
    const auto it = facts.find(key);
    return it == facts.end() ? std::string() : it->second;
  };

  SystemReport report;
  CudaReport& cuda = report.cuda;
  cuda.driver_library = get("driver.library");
  cuda.driver_version = get("driver.version");
  const int count = get("device.count").empty() ? 0 : std::stoi(get("device.count"));
  for (int i = 0; i < count; ++i) {
    const std::string prefix = "device." + std::to_string(i) + ".";
    CudaDevice device;
    device.index = i;
    device.name = get(prefix + "name");
    device.compute_capability = get(prefix + "cc");
    if (!get(prefix + "memory").empty()) device.memory_bytes = std::stoll(get(prefix + "memory"));
    cuda.devices.push_back(device);
  }
  if (!get("driver.error").empty())
    cuda.reason = get("driver.error");
  else if (!get("device.count").empty() && count == 0)
    cuda.reason = "the CUDA driver loaded and initialised but reports no devices "
                  "(check CUDA_VISIBLE_DEVICES and the container's GPU access)";
  else if (get("device.count").empty())
    cuda.reason = failure.empty() ? "the CUDA probe reported nothing" : failure;
  cuda.usable = cuda.reason.empty() && count > 0;
  cuda.runtime_library = get("runtime.library");
  cuda.runtime_version = get("runtime.version");
  cuda.runtime_found = !cuda.runtime_version.empty();
  cuda.runtime_reason = get("runtime.error");
  if (cuda.runtime_reason.empty() && !cuda.runtime_found)
    cuda.runtime_reason = failure.empty() ? "the CUDA runtime probe reported nothing" : failure;

  NcclReport& nccl = report.nccl;
  nccl.library = get("nccl.library");
  nccl.version = get("nccl.version");
  nccl.reason = get("nccl.error");
  if (nccl.reason.empty() && nccl.version.empty())
    nccl.reason = failure.empty() ? "the NCCL probe reported nothing" : failure;
  nccl.usable = nccl.reason.empty();
  return report;
}

}  // namespace switchyard::cli
