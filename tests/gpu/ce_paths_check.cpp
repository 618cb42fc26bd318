// ce_paths_check: te's cross entropy promises (plugins/te/README.md, "Statistics order") that a
// row gets the same bits whichever of its paths computes it: grad in forward (the persistent
// cluster kernel, or the one-cluster-a-row kernel) gives the plain forward's lse, loss and argmax
// and the backward's gradient, into its own buffer or over the logits. Shapes big enough that
// every resident cluster takes several rows (the persistent kernel's refilled pieces), a
// vocabulary that leaves a partial last chunk and partial pieces, ignored rows and labels in the
// last chunk, rows padded to 16 bytes (the padding must stay untouched). Every output is
// poisoned (NaN / -1) before each call.
// One line per case ("PASS|FAIL|SKIP ce-paths-<plugin>/<case>  detail"), then
// "N passed, M failed, K skipped". Exit 0 when nothing failed, 77 without a GPU, 1 otherwise.
//
//   ce_paths_check [--plugin NAME]        (default: te)
#include "ce_call_args.hpp"
#include "gpu_tensor.hpp"
#include "plugin_check_start.hpp"

#include <switchyard/switchyard.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace {

using gpu_test::GpuTensor;
using gpu_test::kBF16;
using gpu_test::kF32;
using gpu_test::kI64;

constexpr int64_t kIgnore = -100;

struct Spec {
  std::string name;
  int64_t rows;
  int64_t vocab;
  float smoothing;
  uint32_t flags;  // SY_CE_IGNORE_INDEX, SY_CE_ARGMAX
  bool padded;     // rows padded to 16 bytes (bulk-copyable), else compact
};

sy_ce_problem problem_of(const Spec& s, bool grad_in_forward) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = s.rows;
  p.vocab_local = p.vocab_size = s.vocab;
  p.logits_dtype = p.grad_dtype = kBF16;
  p.label_dtype = kI64;
  p.device = DLDevice{kDLCUDA, 0};
  p.tp_size = 1;
  p.label_smoothing = s.smoothing;
  p.smoothing = SY_SMOOTHING_MEGATRON;
  p.ignore_index = kIgnore;
  p.flags = s.flags | (grad_in_forward ? SY_CE_GRAD_IN_FORWARD : 0u);
  return p;
}

// The outputs of one path, as stored (bf16 and int64 values are exact in a double).
struct Result {
  std::vector<double> loss, lse, argmax, grad;
  bool padding_untouched = true;  // the gradient's row padding still holds its poison
};

struct Inputs {
  std::vector<double> logits, labels, scale;
};

Inputs inputs_of(const Spec& s) {
  gpu_test::Random random("ce-paths/" + s.name);
  Inputs in;
  in.logits.resize(static_cast<size_t>(s.rows * s.vocab));
  for (double& x : in.logits) x = random.uniform(-6.0, 6.0);
  for (int64_t i = 0; i < s.rows; ++i) {
    int64_t label = random.integer(0, s.vocab);
    if (i % 5 == 1) label = s.vocab - 1 - random.integer(0, 3);  // in the last chunk
    if ((s.flags & SY_CE_IGNORE_INDEX) != 0 && i % 7 == 3) label = kIgnore;
    in.labels.push_back(static_cast<double>(label));
    in.scale.push_back(random.uniform(0.25, 2.0));
  }
  return in;
}

// kind 0: forward, then backward with grad_loss = scale; 1: grad in forward into its own
// buffer; 2: grad in forward over the logits.
Result run_path(const switchyard::Runtime& runtime, const Spec& s, const Inputs& in, int kind,
                cudaStream_t stream) {
  const bool gif = kind != 0;
  const sy_ce_problem p = problem_of(s, gif);
  const switchyard::CrossEntropy op = runtime.cross_entropy(p);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Rows padded to 16 bytes: the persistent grad-in-forward kernel takes bulk-copyable rows
  // only (compact rows of an odd vocabulary take the one-cluster-a-row kernel), and the padding
  // shows any write past a row.
  const int64_t stride = s.padded ? (s.vocab + 7) / 8 * 8 : 0;
  GpuTensor logits(kBF16, s.rows, s.vocab, stride, 0), labels(kI64, s.rows, 0, 0, 0);
  GpuTensor scale(kF32, s.rows, 0, 0, 0), loss(kF32, s.rows, 0, 0, 0), lse(kF32, s.rows, 0, 0, 0);
  GpuTensor argmax(kI64, s.rows, 0, 0, 0), grad(kBF16, s.rows, s.vocab, stride, 0);
  logits.fill(in.logits, nan);
  labels.fill(in.labels, 0);
  scale.fill(in.scale, 0);
  for (GpuTensor* out : {&loss, &lse, &grad}) out->fill({}, nan);  // poison
  argmax.fill({}, -1.0);
  GpuTensor* grad_out = kind == 2 ? &logits : &grad;
  const bool want_argmax = (s.flags & SY_CE_ARGMAX) != 0;
  const int64_t bytes = op.workspace_size();
  gpu_test::DeviceBuffer workspace(static_cast<size_t>(bytes));

  sy_ce_forward_args f =
      gpu_test::ce_forward_args(p, logits, labels, loss, lse, workspace.data(), bytes, stream);
  f.argmax = want_argmax ? argmax.dl() : nullptr;
  f.grad_scale = gif ? scale.dl() : nullptr;
  f.grad_logits = gif ? grad_out->dl() : nullptr;
  op.forward(f);
  if (!gif)
    op.backward(gpu_test::ce_backward_args(p, logits, labels, lse, scale, grad, workspace.data(),
                                           bytes, stream));
  if (cudaStreamSynchronize(stream) != cudaSuccess)
    throw std::runtime_error(std::string("the calls failed: ") + cudaGetErrorString(cudaGetLastError()));
  return Result{loss.values(), lse.values(), want_argmax ? argmax.values() : std::vector<double>{},
                grad_out->values(), grad_out->padding_untouched()};
}

// The first element left poisoned (NaN, or a negative argmax), or empty: every input is finite,
// so every output element must be written and finite.
std::string first_unwritten(const std::string& path, const Result& r, int64_t cols) {
  for (size_t i = 0; i < r.loss.size(); ++i)
    if (std::isnan(r.loss[i]) || std::isnan(r.lse[i]))
      return path + ": loss or lse of row " + std::to_string(i) + " is NaN (unwritten?)";
  for (size_t i = 0; i < r.argmax.size(); ++i)
    if (r.argmax[i] < 0 || r.argmax[i] >= static_cast<double>(cols))
      return path + ": argmax of row " + std::to_string(i) + " is " + std::to_string(r.argmax[i]);
  for (size_t k = 0; k < r.grad.size(); ++k)
    if (std::isnan(r.grad[k]))
      return path + ": gradient NaN (unwritten?) at row " + std::to_string(k / cols) +
             ", column " + std::to_string(k % cols);
  if (!r.padding_untouched) return path + ": the gradient's row padding was written";
  return {};
}

// The first element where a and b differ in their bits, or empty.
std::string first_difference(const std::string& what, const std::vector<double>& a,
                             const std::vector<double>& b, int64_t cols) {
  if (a.size() != b.size()) return what + ": sizes differ";
  for (size_t k = 0; k < a.size(); ++k)
    if (std::memcmp(&a[k], &b[k], sizeof(double)) != 0)
      return what + " differs at row " + std::to_string(k / cols) + ", column " +
             std::to_string(k % cols);
  return {};
}

std::string check(const switchyard::Runtime& runtime, const Spec& s, cudaStream_t stream) {
  const Inputs in = inputs_of(s);
  const Result two_pass = run_path(runtime, s, in, 0, stream);
  std::string failures = first_unwritten("forward + backward", two_pass, s.vocab);
  for (int kind : {1, 2}) {
    const Result r = run_path(runtime, s, in, kind, stream);
    const std::string path = kind == 1 ? "grad in forward" : "grad in forward over the logits";
    for (const std::string& d :
         {first_unwritten(path, r, s.vocab),
          first_difference(path + ": loss", r.loss, two_pass.loss, 1),
          first_difference(path + ": lse", r.lse, two_pass.lse, 1),
          first_difference(path + ": argmax", r.argmax, two_pass.argmax, 1),
          first_difference(path + ": gradient", r.grad, two_pass.grad, s.vocab)})
      if (!d.empty()) failures += (failures.empty() ? "" : "; ") + d;
  }
  if (!failures.empty()) throw std::runtime_error(failures);
  return "grad in forward (own buffer and over the logits) gives the forward's loss, lse" +
         std::string((s.flags & SY_CE_ARGMAX) != 0 ? ", argmax" : "") +
         " and the backward's gradient bit for bit";
}

}  // namespace

int main(int argc, char** argv) {
  const gpu_test::PluginCheckStart start =
      gpu_test::start_plugin_check(argc, argv, "ce_paths_check", "ce-paths");
  if (start.exit_status) return *start.exit_status;
  const std::string& prefix = start.prefix;
  switchyard::RuntimeOptions options;
  options.cross_entropy = start.info.path;
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  const switchyard::Runtime runtime(options);
  // 1000 rows: more than the resident clusters of an H200 (about 100), so clusters refill.
  const std::vector<Spec> specs{
      {"bf16-1000x131072", 1000, 131072, 0.0f, 0, false},
      // Rows of 4, 2 and 1 full slices (te's persistent kernel with clusters of 4, 2 and 1),
      // with the flags that change what a slice publishes (argmax, the sum of logits, ignored
      // rows).
      {"bf16-1000x131072-smoothing-ignore-argmax", 1000, 131072, 0.1f,
       SY_CE_IGNORE_INDEX | SY_CE_ARGMAX, false},
      {"bf16-1000x65536-ignore-argmax", 1000, 65536, 0.0f, SY_CE_IGNORE_INDEX | SY_CE_ARGMAX,
       false},
      {"bf16-1000x32768-smoothing", 1000, 32768, 0.1f, 0, false},
      {"bf16-1000x100003-padded-smoothing-ignore-argmax", 1000, 100003, 0.1f,
       SY_CE_IGNORE_INDEX | SY_CE_ARGMAX, true},
      {"bf16-1000x100003-compact-smoothing-ignore-argmax", 1000, 100003, 0.1f,
       SY_CE_IGNORE_INDEX | SY_CE_ARGMAX, false},
      {"bf16-600x50257-padded-ignore", 600, 50257, 0.0f, SY_CE_IGNORE_INDEX, true},
  };
  int passed = 0, failed = 0;
  for (const Spec& s : specs) {
    std::string verdict = "PASS", detail;
    try {
      detail = check(runtime, s, stream);
    } catch (const std::exception& e) {
      verdict = "FAIL";
      detail = e.what();
    }
    cudaDeviceSynchronize();
    cudaGetLastError();
    (verdict == "PASS" ? passed : failed) += 1;
    std::cout << verdict << ' ' << prefix << s.name << "  " << detail << std::endl;
  }
  cudaStreamDestroy(stream);
  std::cout << passed << " passed, " << failed << " failed, 0 skipped\n";
  return failed == 0 ? 0 : 1;
}
