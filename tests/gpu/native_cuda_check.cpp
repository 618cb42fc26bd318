// The native plugin's CUDA path on a real GPU (see native_cuda_checks.hpp). One line per check
// ("PASS name  detail" / "FAIL name  what went wrong" / "SKIP name  why"), then
// "N passed, M failed, K skipped". Exit 0 when nothing failed, 77 without a GPU, 1 otherwise.
//
//   native_cuda_check [--filter TEXT]
#include "native_cuda_checks.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>

int main(int argc, char** argv) {
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else {
      std::cerr << "usage: native_cuda_check [--filter TEXT]\n";
      return 2;
    }
  }
  int devices = 0;
  const cudaError_t count = cudaGetDeviceCount(&devices);
  if (count != cudaSuccess || devices < 1) {
    std::cout << "SKIP native-cuda/*  no usable GPU ("
              << (count != cudaSuccess ? cudaGetErrorString(count) : "0 devices") << ")\n"
              << "0 passed, 0 failed, 1 skipped\n";
    return 77;
  }
  cudaSetDevice(0);
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::cout << "FAIL native-cuda/setup  cudaStreamCreateWithFlags failed\n"
              << "0 passed, 1 failed, 0 skipped\n";
    return 1;
  }
  switchyard::RuntimeOptions options;
  options.cross_entropy = "native";
  options.norm = "native";
  const switchyard::Runtime runtime(options);
  gpu_test::NativeContext context{&runtime, devices, stream};

  std::vector<gpu_test::Check> checks = gpu_test::ce_checks();
  for (auto* more : {&gpu_test::norm_checks, &gpu_test::refusal_checks})
    for (gpu_test::Check& c : more()) checks.push_back(std::move(c));

  int passed = 0, failed = 0, skipped = 0;
  for (const gpu_test::Check& c : checks) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    const auto start = std::chrono::steady_clock::now();
    std::string verdict, detail;
    try {
      detail = c.run(context);
      verdict = "PASS";
      ++passed;
    } catch (const gpu_test::Skip& s) {
      verdict = "SKIP";
      detail = s.what();
      ++skipped;
    } catch (const std::exception& e) {
      verdict = "FAIL";
      detail = e.what();
      ++failed;
    }
    // A check that failed may leave an error behind; the next one starts clean.
    cudaDeviceSynchronize();
    cudaGetLastError();
    cudaSetDevice(0);
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start).count();
    char timing[32];
    std::snprintf(timing, sizeof timing, " (%.0f ms)", ms);
    std::cout << verdict << " native-cuda/" << c.name << "  " << detail << timing << std::endl;
  }
  cudaStreamDestroy(stream);
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed == 0 ? 0 : 1;
}
