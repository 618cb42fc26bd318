// switchyard-bench's command line.
#ifndef SWITCHYARD_BENCH_OPTIONS_HPP
#define SWITCHYARD_BENCH_OPTIONS_HPP

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::bench {

struct BenchOptions {
  std::vector<std::string> backends;  // empty: every plugin that declares the device
  bool family_ce = true;
  bool family_norm = true;
  std::string device = "cuda";  // "cuda" | "cpu"
  int gpu = 0;
  int reps = 20;
  int warmup = 5;
  std::vector<std::string> cases;  // empty: every case of the selected families
  bool small = false;
  std::vector<int64_t> norm_hidden;  // extra norm cases: rmsnorm_H and layernorm_H for each H
  std::string json_path;  // "" none, "-" stdout
  bool list_cases = false;
  bool help = false;
  DLDataType dtype{kDLBfloat, 16, 1};
  bool grad_in_place = true;
  int hold_us = 1000;
  bool hold_on_host = false;  // --hold-kind host
  std::string tp_mode = "auto";  // "auto" | "single"
  int check_rows = 32;
  int64_t copy_bytes = 0;  // 0: 4 GiB on CUDA, 256 MiB on the CPU (16 MiB with --small)
  uint64_t seed = 1234;
  std::vector<std::string> plugin_path;
  bool quiet = false;
  std::vector<std::string> warnings;  // said on stderr before the run
  std::string command_line;
};

// Throws BenchError with the offending flag and what it accepts.
BenchOptions parse_options(int argc, char** argv);
std::string usage_text();

}  // namespace switchyard::bench

#endif
