// What `switchyard doctor` learns about the machine: the CUDA driver and runtime, and NCCL.
// Everything is opened with dlopen in a child process, so the CLI links no CUDA, a broken
// driver that crashes or hangs cannot take the doctor down, and this process never
// initialises CUDA before it forks children to load plugins.
#ifndef SWITCHYARD_CLI_SYSTEM_PROBE_HPP
#define SWITCHYARD_CLI_SYSTEM_PROBE_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::cli {

struct CudaDevice {
  int index = 0;
  std::string name;
  std::string compute_capability;  // "9.0"
  int64_t memory_bytes = 0;
};

struct CudaReport {
  bool usable = false;
  std::string reason;               // why not usable; empty when usable
  std::string driver_library;       // what was opened, or tried
  std::string driver_version;       // "13.0", empty when unknown
  std::vector<CudaDevice> devices;
  bool runtime_found = false;
  std::string runtime_library;      // the libcudart that was opened, or those tried
  std::string runtime_version;      // "13.0", empty when unknown
  std::string runtime_reason;       // why the runtime could not be used
};

struct NcclReport {
  bool usable = false;
  std::string library;
  std::string version;  // "2.27.3"
  std::string reason;
};

struct SystemReport {
  CudaReport cuda;
  NcclReport nccl;
};

// Runs the probes in a child process (killed after `timeout_seconds`). A probe that crashes
// or hangs is reported in the reasons, never thrown.
SystemReport probe_system(int timeout_seconds = 30);

}  // namespace switchyard::cli

#endif
