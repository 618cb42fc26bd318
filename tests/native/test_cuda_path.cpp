// The native plugin's CUDA path as seen from the CPU side. On a machine without a GPU (CI, the
// development machine) the plugin still loads, probe() says SY_OK (the CPU path runs) and logs
// why CUDA cannot, every CUDA problem is refused SY_ERR_UNAVAILABLE with that reason before
// any memory is touched, workspace sizes follow the documented layout, and the CPU path is
// unaffected. (The kernels themselves run in the GPU suite: tests/gpu/run.sh.)
#include "ce_harness.hpp"
#include "native_support.hpp"
#include "norm_harness.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace native_test;

namespace {

constexpr const char* kLinePrefix = "INFO [native] CUDA path";

int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

#if SWITCHYARD_TEST_NATIVE_CUDA

namespace {

// The line probe() logged about the CUDA path ("" when none).
std::string probe_line() {
  clear_host_log();
  const sy_plugin* plugin = load_native();
  REQUIRE(plugin != nullptr);
  sy_error err = make_error();
  CHECK(plugin->probe(&err) == SY_OK);
  CHECK(std::string(err.message).empty());
  for (const std::string& line : host_log())
    if (line.rfind(kLinePrefix, 0) == 0) return line;
  return "";
}

bool cuda_usable_here() {
  return probe_line().rfind(std::string(kLinePrefix) + ": ", 0) == 0;
}

// The reason probe() gave for the CUDA path being unavailable.
std::string unavailable_reason() {
  const std::string line = probe_line();
  const std::string head = std::string(kLinePrefix) + " unavailable: ";
  const auto tail = line.find("; native serves CPU tensors only");
  REQUIRE(line.rfind(head, 0) == 0);
  REQUIRE(tail != std::string::npos);
  return line.substr(head.size(), tail - head.size());
}

sy_ce_problem cuda_ce_problem(int32_t device_id = 0) {
  sy_ce_problem p = make_ce_problem(4, 10);
  p.device = DLDevice{kDLCUDA, device_id};
  return p;
}

sy_norm_problem cuda_norm_problem(sy_norm_kind kind = SY_NORM_RMS) {
  sy_norm_problem p = make_norm_problem(kind, 5, 12);
  p.device = DLDevice{kDLCUDA, 0};
  return p;
}

}  // namespace

TEST_CASE("the CUDA build declares CPU and CUDA, and probe() says SY_OK with the CUDA status") {
  const std::string line = probe_line();
  INFO(line);
  REQUIRE(!line.empty());
  if (cuda_usable_here()) {
    CHECK(line.find("CUDA device") != std::string::npos);
    CHECK(line.find("kernels built for CUDA architectures") != std::string::npos);
  } else {
    // cudaGetDeviceCount's own words, or "no CUDA device" when it found none.
    const std::string reason = unavailable_reason();
    const bool named = reason.rfind("cudaGetDeviceCount failed: cudaError", 0) == 0 ||
                       reason.rfind("no CUDA device", 0) == 0;
    CHECK(named);
  }
  const uint32_t both = SY_DEVICE_BIT(kDLCPU) | SY_DEVICE_BIT(kDLCUDA);
  CHECK(ce().devices == both);
  CHECK(norm().devices == both);
}

TEST_CASE("supports() refuses CUDA problems with SY_ERR_UNAVAILABLE and probe's reason") {
  if (cuda_usable_here()) {
    MESSAGE("this machine has a usable GPU: the refusals are checked where there is none");
    sy_error err = make_error();
    const sy_ce_problem p = cuda_ce_problem();
    CHECK(ce().supports(&p, &err) == SY_OK);
    return;
  }
  const std::string reason = unavailable_reason();
  for (const int32_t id : {0, 3}) {
    CAPTURE(id);
    const std::string device = "problem.device = cuda:" + std::to_string(id);
    sy_error err = make_error();
    const sy_ce_problem ce_problem = cuda_ce_problem(id);
    check_refusal(ce().supports(&ce_problem, &err), err, SY_ERR_UNAVAILABLE,
                  {device.c_str(), "cannot run on this machine", reason.c_str(),
                   "use CPU tensors"});
    for (const sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2}) {
      sy_norm_problem norm_problem = cuda_norm_problem(kind);
      norm_problem.device.device_id = id;
      err = make_error();
      check_refusal(norm().supports(&norm_problem, &err), err, SY_ERR_UNAVAILABLE,
                    {device.c_str(), "cannot run on this machine", reason.c_str()});
    }
  }
  // A problem that is wrong in itself is refused for that, whatever the device.
  sy_ce_problem bad = cuda_ce_problem();
  bad.label_smoothing = 2.0f;
  sy_error err = make_error();
  check_refusal(ce().supports(&bad, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"problem.label_smoothing = 2"});
}

TEST_CASE("forward and backward of a CUDA problem are refused before any memory is touched") {
  if (cuda_usable_here()) return;
  const std::string reason = unavailable_reason();
  // Host tensors behind a CUDA problem: the refusal must come from the device check, before
  // the tensors are looked at (they would be refused as host memory on a GPU machine).
  const sy_ce_problem cpu_problem = make_ce_problem(4, 10, sy::kF32, SY_CE_GRAD_IN_FORWARD);
  CeSetup s(cpu_problem, random_ce_data(4, 10, sy::kF32, 7, false));
  sy_ce_problem cuda_problem = cpu_problem;
  cuda_problem.device = DLDevice{kDLCUDA, 0};
  s.poison_outputs();
  sy_ce_forward_args f = s.forward_args();
  f.problem = &cuda_problem;
  sy_error err = make_error();
  check_refusal(ce().forward(&f, &err), err, SY_ERR_UNAVAILABLE,
                {"problem.device = cuda:0", reason.c_str()});
  sy_ce_backward_args b = s.backward_args();
  b.problem = &cuda_problem;
  err = make_error();
  check_refusal(ce().backward(&b, &err), err, SY_ERR_UNAVAILABLE,
                {"problem.device = cuda:0", reason.c_str()});
  for (int64_t i = 0; i < 4; ++i) {
    CHECK(std::isnan(s.loss.get(i)));
    CHECK(std::isnan(s.lse.get(i)));
    CHECK(std::isnan(s.grad.get(i, 0)));
  }

  const sy_norm_problem norm_cpu = make_norm_problem(SY_NORM_LAYER, 3, 8);
  NormSetup n(norm_cpu, random_norm_data(norm_cpu, 3));
  sy_norm_problem norm_cuda = norm_cpu;
  norm_cuda.device = DLDevice{kDLCUDA, 0};
  sy_norm_forward_args nf = n.forward_args();
  nf.problem = &norm_cuda;
  err = make_error();
  check_refusal(norm().forward(&nf, &err), err, SY_ERR_UNAVAILABLE,
                {"problem.device = cuda:0", reason.c_str()});
  sy_norm_backward_args nb = n.backward_args();
  nb.problem = &norm_cuda;
  err = make_error();
  check_refusal(norm().backward(&nb, &err), err, SY_ERR_UNAVAILABLE,
                {"problem.device = cuda:0", reason.c_str()});
  CHECK(std::isnan(n.y.get(0, 0)));
  CHECK(std::isnan(n.dx.get(0, 0)));
}

TEST_CASE("workspace_size of a CUDA problem is pure arithmetic over the documented layout") {
  // Answered without a device (the host sizes workspaces before it has one).
  for (const int64_t rows : {int64_t{0}, int64_t{4}, int64_t{1000}}) {
    for (const int64_t vocab : {int64_t{1}, int64_t{10}, int64_t{50257}}) {
      CAPTURE(rows);
      CAPTURE(vocab);
      sy_ce_problem p = cuda_ce_problem();
      p.rows = rows;
      p.vocab_local = p.vocab_size = vocab;
      int64_t bytes = -1;
      sy_error err = make_error();
      REQUIRE(ce().workspace_size(&p, &bytes, &err) == SY_OK);
      // fp32 logits copy with rows of whole 8-element chunks; local max, global max, sum of
      // exp (fp32); target | sum (2 x fp32); argmax (int64); the label flag; 256 bytes of
      // slack for an unaligned pointer.
      const int64_t padded_vocab = (vocab + 7) / 8 * 8;
      const int64_t expected = align256(rows * padded_vocab * 4) + 3 * align256(rows * 4) +
                               2 * align256(rows * 8) + align256(8) + 256;
      CHECK(bytes == expected);
    }
  }
  for (const sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2}) {
    for (const int64_t rows : {int64_t{0}, int64_t{64}, int64_t{65}, int64_t{4096}}) {
      CAPTURE(kind);
      CAPTURE(rows);
      sy_norm_problem p = cuda_norm_problem(kind);
      p.rows = rows;
      p.hidden = 300;
      int64_t bytes = -1;
      sy_error err = make_error();
      REQUIRE(norm().workspace_size(&p, &bytes, &err) == SY_OK);
      // dgamma and dbeta partials: one row of H doubles (padded to whole 8-element chunks)
      // per 64 rows; none for L2Norm.
      const int64_t partials = align256((rows + 63) / 64 * 304 * 8);
      CHECK(bytes == (kind == SY_NORM_L2 ? 0 : 2 * partials + 256));
    }
  }
}

TEST_CASE("device types without a path are UNSUPPORTED, naming what native runs on") {
  for (const DLDeviceType type : {kDLCUDAHost, kDLCUDAManaged, kDLROCM}) {
    sy_ce_problem p = make_ce_problem(4, 10);
    p.device = DLDevice{type, 0};
    sy_error err = make_error();
    check_refusal(ce().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                  {"problem.device = ", "cpu:N", "cuda:N"});
  }
}

#else  // a build without the CUDA toolkit

TEST_CASE("without the CUDA toolkit, CUDA problems are UNSUPPORTED: the CPU only") {
  sy_ce_problem p = make_ce_problem(4, 10);
  p.device = DLDevice{kDLCUDA, 0};
  sy_error err = make_error();
  check_refusal(ce().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                {"problem.device = cuda:0", "CPU only", "built without the CUDA toolkit"});
  CHECK(ce().devices == SY_DEVICE_BIT(kDLCPU));
  (void)align256;
  (void)kLinePrefix;
}

#endif

TEST_CASE("the CPU path still computes after CUDA requests") {
  sy_ce_problem gpu = make_ce_problem(4, 10);
  gpu.device = DLDevice{kDLCUDA, 0};
  sy_error err = make_error();
  (void)ce().supports(&gpu, &err);
  const sy_ce_problem p = make_ce_problem(4, 10);
  CeSetup s(p, random_ce_data(4, 10, sy::kF32, 11, false));
  s.poison_outputs();
  sy_ce_forward_args f = s.forward_args();
  err = make_error();
  REQUIRE(ce().forward(&f, &err) == SY_OK);
  for (int64_t i = 0; i < 4; ++i) {
    // loss = lse - z_t >= 0, with the target logit z_t in [-4, 4).
    CHECK(s.loss.get(i) >= 0.0);
    CHECK(std::fabs(s.lse.get(i) - s.loss.get(i)) <= 4.0);
  }
}
