// The built libswitchyard-fused.so through its ABI, on a machine without a GPU: it loads,
// probe() says exactly why it cannot run, supports() answers per problem, and every refusal
// names the argument. (Its kernels run in fused_kernel_tests, on the emulator.)
#include "ce_run.hpp"
#include "norm_run.hpp"
#include "support/fused_support.hpp"

#include <switchyard/plugin_helpers.hpp>
#include <switchyard/switchyard.hpp>

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <filesystem>

using switchyard::fused::test::FakeHost;
using switchyard::fused::test::HostTensor;
using Options = std::map<std::string, std::string>;

namespace {

// The plugin's library, opened once; each test re-runs the entry with its own host.
const sy_plugin* enter(const FakeHost& host) {
  static void* handle = [] {
    void* h = dlopen(SY_TEST_FUSED_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    REQUIRE_MESSAGE(h != nullptr, dlerror());
    return h;
  }();
  auto entry = reinterpret_cast<sy_plugin_entry>(dlsym(handle, SY_PLUGIN_ENTRY_SYMBOL));
  const bool found = entry != nullptr;
  REQUIRE(found);
  return entry(host.get());
}

struct Outcome {
  sy_status status;
  std::string message;
};

template <class Fn>
Outcome call(Fn&& fn) {
  sy_error err{};
  err.struct_size = sizeof err;
  const sy_status status = fn(&err);
  CHECK(err.status == status);
  return {status, err.message};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

sy_ce_problem ce_problem(int64_t vocab = 131072, int32_t tp = 1) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = 8;
  p.vocab_size = vocab;
  p.tp_size = tp;
  p.vocab_local = vocab / tp;
  p.logits_dtype = sy::kBF16;
  p.grad_dtype = sy::kBF16;
  p.label_dtype = sy::kI64;
  p.device = DLDevice{kDLCUDA, 0};
  p.ignore_index = -100;
  return p;
}

sy_norm_problem norm_problem(sy_norm_kind kind = SY_NORM_RMS, int64_t hidden = 4096) {
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = kind;
  p.rows = 1000;
  p.hidden = hidden;
  p.eps = 1e-5f;
  p.x_dtype = p.y_dtype = p.weight_dtype = p.grad_weight_dtype = sy::kBF16;
  p.device = DLDevice{kDLCUDA, 0};
  return p;
}

bool gpu_visible(const sy_plugin& plugin) {
  sy_error err{};
  err.struct_size = sizeof err;
  return plugin.probe(&err) == SY_OK;
}

}  // namespace

TEST_CASE("the plugin loads without a GPU, with NVRTC not even opened") {
  FakeHost host;
  const sy_plugin* plugin = enter(host);
  REQUIRE(plugin != nullptr);
  // Loading and entering opened neither NVRTC nor anything that needs it.
  CHECK(dlopen("libnvrtc.so.13", RTLD_LAZY | RTLD_NOLOAD) == nullptr);
  CHECK(std::string(plugin->name) == "fused");
  CHECK(plugin->abi_major == SY_ABI_MAJOR);
  CHECK(plugin->struct_size == sizeof(sy_plugin));
  CHECK(contains(plugin->description, "NVRTC"));
  CHECK(contains(plugin->build_info, "NVRTC opened at run time"));
  REQUIRE(plugin->cross_entropy != nullptr);
  REQUIRE(plugin->norm != nullptr);
  const sy_cross_entropy& ce = *plugin->cross_entropy;
  CHECK(ce.devices == SY_DEVICE_BIT(kDLCUDA));
  CHECK(ce.dtypes == (SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16));
  CHECK(ce.features == (SY_CE_FEATURE_LABEL_SMOOTHING | SY_CE_FEATURE_IGNORE_INDEX |
                        SY_CE_FEATURE_ARGMAX | SY_CE_FEATURE_GRAD_IN_FORWARD |
                        SY_CE_FEATURE_TENSOR_PARALLEL));
  CHECK((ce.features & SY_FEATURE_GRAPH_CAPTURE) == 0);  // CHECK_LABELS syncs; first use compiles
  CHECK(ce.determinism == SY_DETERMINISTIC);
  const sy_norm& norm = *plugin->norm;
  CHECK(norm.devices == SY_DEVICE_BIT(kDLCUDA));
  CHECK((norm.features & SY_NORM_FEATURE_SM_MARGIN) == 0);
  CHECK((norm.features & SY_NORM_FEATURE_MEMORY_EFFICIENT) != 0);
  CHECK(norm.determinism == SY_DETERMINISTIC);
}

TEST_CASE("probe: SY_ERR_UNAVAILABLE with every reason it cannot run here") {
  FakeHost host;
  const sy_plugin* plugin = enter(host);
  REQUIRE(plugin != nullptr);
  const Outcome probed = call([&](sy_error* e) { return plugin->probe(e); });
  if (probed.status == SY_OK) {
    MESSAGE("a GPU is visible here: the no-GPU reason cannot be checked on this machine");
    return;
  }
  CHECK(probed.status == SY_ERR_UNAVAILABLE);
  CHECK(contains(probed.message, "fused cannot run here: "));
  CHECK(contains(probed.message, "cudaGetDeviceCount"));
  CHECK_FALSE(contains(probed.message, "NVRTC"));  // it is installed here

  FakeHost without_nvrtc(Options{{"fused.nvrtc_library", "/nonexistent/libnvrtc.so.13"}});
  const sy_plugin* again = enter(without_nvrtc);
  REQUIRE(again != nullptr);
  const Outcome both = call([&](sy_error* e) { return again->probe(e); });
  CHECK(both.status == SY_ERR_UNAVAILABLE);
  CHECK(contains(both.message, "cudaGetDeviceCount"));
  CHECK(contains(both.message, "; also, NVRTC (the CUDA runtime compiler) could not be loaded: "
                               "/nonexistent/libnvrtc.so.13"));
}

TEST_CASE("supports: valid problems pass; each refusal names the field and the fix") {
  FakeHost host;
  const sy_plugin* plugin = enter(host);
  REQUIRE(plugin != nullptr);
  const sy_cross_entropy& ce = *plugin->cross_entropy;
  auto ce_supports = [&](const sy_ce_problem& p) {
    return call([&](sy_error* e) { return ce.supports(&p, e); });
  };
  CHECK(ce_supports(ce_problem()).status == SY_OK);
  sy_ce_problem tp = ce_problem(50, 2);
  tp.vocab_local = 20;  // unequal partitions are fine
  CHECK(ce_supports(tp).status == SY_OK);

  sy_ce_problem p = ce_problem();
  p.device = DLDevice{kDLCPU, 0};
  Outcome o = ce_supports(p);
  CHECK(o.status == SY_ERR_UNSUPPORTED);
  CHECK(o.message == "problem.device = cpu:0: fused runs on CUDA devices only (cuda:N); use native for CPU tensors");

  p = ce_problem(1000, 2);
  p.vocab_local = 1000;
  o = ce_supports(p);
  CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(o.message, "gathered (full-vocabulary) logits"));

  p = ce_problem(int64_t{1} << 31, 1);
  o = ce_supports(p);
  CHECK(o.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(o.message, "problem.vocab_local = 2147483648 exceeds the 1073725440 columns"));

  p = ce_problem();
  p.flags = 1u << 8;
  o = ce_supports(p);
  CHECK(o.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(o.message, "problem.flags has bits 0x100 that fused does not know"));

  p = ce_problem();
  p.label_dtype = sy::kF32;
  o = ce_supports(p);
  CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(o.message == "problem.label_dtype = float32; labels must be int64 or int32");

  p = ce_problem();
  p.logits_dtype = sy::kF64;
  o = ce_supports(p);
  CHECK(o.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(o.message, "problem.logits_dtype = float64 is not supported by fused"));

  p = ce_problem();
  p.label_smoothing = 1.0f;
  CHECK(ce_supports(p).message == "problem.label_smoothing = 1 must be in [0, 1)");

  const sy_norm& norm = *plugin->norm;
  auto norm_supports = [&](const sy_norm_problem& q) {
    return call([&](sy_error* e) { return norm.supports(&q, e); });
  };
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2})
    CHECK(norm_supports(norm_problem(kind)).status == SY_OK);
  sy_norm_problem q = norm_problem(SY_NORM_LAYER, 100000);
  o = norm_supports(q);
  CHECK(o.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(o.message, "problem.hidden = 100000 exceeds the 65536 values fused keeps"));
  q = norm_problem();
  q.eps = 0;
  CHECK(norm_supports(q).status == SY_ERR_INVALID_ARGUMENT);
  q = norm_problem();
  q.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  o = norm_supports(q);
  CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(o.message, "SY_NORM_ACCUMULATE_GRAD_WEIGHT accumulates into float32 buffers"));
  q = norm_problem();
  q.device = DLDevice{kDLCPU, 0};
  CHECK(norm_supports(q).status == SY_ERR_UNSUPPORTED);
  q = norm_problem();
  q.sm_margin = 4;  // accepted and ignored (SY_NORM_FEATURE_SM_MARGIN is not claimed)
  CHECK(norm_supports(q).status == SY_OK);
}

TEST_CASE("workspace sizes and the collectives one forward issues") {
  FakeHost host;
  const sy_plugin* plugin = enter(host);
  REQUIRE(plugin != nullptr);
  const sy_cross_entropy& ce = *plugin->cross_entropy;
  int64_t bytes = -1;
  sy_ce_problem p = ce_problem();
  CHECK(ce.workspace_size(&p, &bytes, nullptr) == SY_OK);
  CHECK(bytes == switchyard::fused::ce_workspace_bytes(p));
  // 131072 columns: 8 chunks per row, whose partial results need room too.
  CHECK(bytes >= p.rows * (4 + 12 + 8 + 8 + 8 * 8 + 8 * 8));
  CHECK(ce.forward_collectives(&p) == 0);
  sy_ce_problem tp = ce_problem(1024, 2);
  CHECK(ce.forward_collectives(&tp) == 2);
  tp.flags = SY_CE_ARGMAX;
  CHECK(ce.forward_collectives(&tp) == 3);
  CHECK(ce.forward_collectives(nullptr) == -1);
  const Outcome null_bytes = call([&](sy_error* e) { return ce.workspace_size(&p, nullptr, e); });
  CHECK(null_bytes.message == "bytes (the output pointer) is NULL");

  const sy_norm& norm = *plugin->norm;
  sy_norm_problem q = norm_problem(SY_NORM_LAYER, 4096);
  CHECK(norm.workspace_size(&q, &bytes, nullptr) == SY_OK);
  // 32 rows per backward block: ceil(1000 / 32) = 32 chunks of partial dgamma and dbeta.
  CHECK(bytes == 2 * 32 * 4096 * 4);
  q.kind = SY_NORM_L2;
  CHECK(norm.workspace_size(&q, &bytes, nullptr) == SY_OK);
  CHECK(bytes == 0);
}

TEST_CASE("forward and backward refuse bad arguments before touching a device") {
  FakeHost host;
  const sy_plugin* plugin = enter(host);
  REQUIRE(plugin != nullptr);
  const sy_cross_entropy& ce = *plugin->cross_entropy;
  sy_ce_problem p = ce_problem(50, 1);
  HostTensor logits(sy::kBF16, {8, 50}), labels(sy::kI64, {8}), loss(sy::kF32, {8}), lse(sy::kF32, {8});
  HostTensor shifted(sy::kBF16, {8, 50}, 0, 2);  // overlaps `logits` two bytes further on
  sy_ce_forward_args a{};
  a.struct_size = sizeof a;
  a.problem = &p;
  a.labels = labels.get();
  a.loss = loss.get();
  a.lse = lse.get();
  Outcome o = call([&](sy_error* e) { return ce.forward(&a, e); });
  CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(o.message == "logits is required but NULL");

  a.logits = logits.get();
  std::vector<unsigned char> small(16);
  a.workspace = small.data();
  a.workspace_bytes = 16;
  o = call([&](sy_error* e) { return ce.forward(&a, e); });
  CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(o.message, "workspace_bytes = 16 is too small: fused needs"));

  sy_ce_problem two = ce_problem(100, 2);
  two.rows = 8;
  two.vocab_local = 50;
  a.problem = &two;
  a.workspace_bytes = switchyard::fused::ce_workspace_bytes(two);
  std::vector<unsigned char> enough(static_cast<size_t>(a.workspace_bytes));
  a.workspace = enough.data();
  o = call([&](sy_error* e) { return ce.forward(&a, e); });
  CHECK(o.message == "tp is NULL but problem.tp_size = 2; pass this rank's tensor-parallel "
                     "communicator (sy_comm over NCCL)");

  sy_ce_backward_args b{};
  b.struct_size = sizeof b;
  b.problem = &p;
  b.logits = logits.get();
  b.labels = labels.get();
  b.lse = lse.get();
  b.grad_loss = loss.get();
  b.grad_logits = shifted.get();
  shifted.get()->data = logits.get()->data;  // the same memory, one element later
  o = call([&](sy_error* e) { return ce.backward(&b, e); });
  CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(o.message, "grad_logits partly overlaps logits"));

  HostTensor on_cpu(sy::kBF16, {8, 50}, 0, 0, DLDevice{kDLCPU, 0});
  b.grad_logits = on_cpu.get();
  o = call([&](sy_error* e) { return ce.backward(&b, e); });
  CHECK(o.message == "grad_logits is on device cpu:0, expected cuda:0");

  const sy_norm& norm = *plugin->norm;
  sy_norm_problem q = norm_problem(SY_NORM_RMS, 64);
  q.rows = 4;
  HostTensor x(sy::kBF16, {4, 64}), y(sy::kBF16, {4, 64}), w(sy::kBF16, {64}), bias(sy::kBF16, {64}),
      rstd(sy::kF32, {4});
  sy_norm_forward_args f{};
  f.struct_size = sizeof f;
  f.problem = &q;
  f.x = x.get();
  f.y = y.get();
  f.weight = w.get();
  f.bias = bias.get();
  f.rstd = rstd.get();
  o = call([&](sy_error* e) { return norm.forward(&f, e); });
  CHECK(o.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(o.message == "bias is set but problem.kind = RMSNorm has no beta; pass bias = NULL (or use SY_NORM_LAYER)");
}

TEST_CASE("a valid call without a GPU fails as UNAVAILABLE, naming the device and why") {
  FakeHost host;
  const sy_plugin* plugin = enter(host);
  REQUIRE(plugin != nullptr);
  if (gpu_visible(*plugin)) {
    MESSAGE("a GPU is visible here: skipped");
    return;
  }
  sy_ce_problem p = ce_problem(50, 1);
  HostTensor logits(sy::kBF16, {8, 50}), labels(sy::kI64, {8}), loss(sy::kF32, {8}), lse(sy::kF32, {8});
  std::vector<unsigned char> workspace(static_cast<size_t>(switchyard::fused::ce_workspace_bytes(p)));
  sy_ce_forward_args a{};
  a.struct_size = sizeof a;
  a.problem = &p;
  a.logits = logits.get();
  a.labels = labels.get();
  a.loss = loss.get();
  a.lse = lse.get();
  a.workspace = workspace.data();
  a.workspace_bytes = static_cast<int64_t>(workspace.size());
  const Outcome o = call([&](sy_error* e) { return plugin->cross_entropy->forward(&a, e); });
  CHECK(o.status == SY_ERR_UNAVAILABLE);
  CHECK(contains(o.message, "problem.device = cuda:0 is not usable: "));
  CHECK(contains(o.message, "cudaGetDeviceCount"));
  CHECK(loss.values() == std::vector<double>(8, 0.0));  // untouched
}

TEST_CASE("a malformed cache option refuses the load, with an error naming it") {
  FakeHost bad_size(Options{{"fused.cache_max_bytes", "lots"}});
  CHECK(enter(bad_size) == nullptr);
  CHECK(contains(bad_size.log_text(), "error [fused] plugin option cache_max_bytes = \"lots\" is not a "
                                      "size in bytes (e.g. 268435456, 256M, 1G)"));
  FakeHost bad_bool(Options{{"*.cache_disable", "maybe"}});
  CHECK(enter(bad_bool) == nullptr);
  CHECK(contains(bad_bool.log_text(), "cache_disable = \"maybe\" is not a boolean"));
  FakeHost fine(Options{{"*.cache_disable", "1"}, {"fused.cache_max_bytes", "64M"}, {"*.cache_dir", "/tmp/x"}});
  CHECK(enter(fine) != nullptr);
}

TEST_CASE("through the core: listed as unavailable with the probe's reason") {
  switchyard::RuntimeOptions options;
  options.plugin_path = {std::filesystem::path(SY_TEST_FUSED_PLUGIN).parent_path().string()};
  options.environment = std::map<std::string, std::string>{};
  const switchyard::Runtime runtime(options);
  const switchyard::PluginInfo info = runtime.inspect("fused");
  if (info.state == switchyard::PluginState::Ok) {
    MESSAGE("a GPU is visible here: skipped");
    return;
  }
  CHECK(info.state == switchyard::PluginState::Unavailable);
  CHECK(contains(info.reason, "fused cannot run here"));
  CHECK(info.cross_entropy.offered);
  CHECK(info.norm.offered);
}
