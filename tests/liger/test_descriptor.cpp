// The liger plugin's descriptor, probe, exports and collective counts.
#include "liger_support.hpp"

#include <doctest/doctest.h>
#include <dlfcn.h>

#include <cstring>

using namespace liger_test;

TEST_CASE("descriptor: name, version, capabilities, determinism, build info") {
  const sy_plugin* plugin = load();
  REQUIRE(plugin != nullptr);
  CHECK(plugin->struct_size == sizeof(sy_plugin));
  CHECK(plugin->abi_major == SY_ABI_MAJOR);
  CHECK(plugin->abi_minor == SY_ABI_MINOR);
  CHECK(std::string(plugin->name) == "liger");
  CHECK(std::string(plugin->version) == "0.1.0");
  CHECK(std::string(plugin->vendor) == "Switchyard");
  CHECK(std::string(plugin->description).find("Liger") != std::string::npos);
  REQUIRE(plugin->build_info != nullptr);
  const std::string info = plugin->build_info;
  CHECK(info.find("linked statically") != std::string::npos);
  CHECK(info.find("sm_90") != std::string::npos);

  const sy_cross_entropy& c = *plugin->cross_entropy;
  CHECK(c.struct_size == sizeof(sy_cross_entropy));
  CHECK(c.dtypes == (SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16));
  CHECK(c.devices == SY_DEVICE_BIT(kDLCUDA));
  CHECK(c.features == (SY_CE_FEATURE_LABEL_SMOOTHING | SY_CE_FEATURE_IGNORE_INDEX |
                       SY_CE_FEATURE_ARGMAX | SY_CE_FEATURE_GRAD_IN_FORWARD |
                       SY_CE_FEATURE_TENSOR_PARALLEL));
  // SY_CE_CHECK_LABELS synchronises the stream: no graph-capture claim for cross entropy.
  CHECK((c.features & SY_FEATURE_GRAPH_CAPTURE) == 0);
  CHECK(c.determinism == SY_DETERMINISTIC);
  const bool states_collectives = c.forward_collectives != nullptr;
  CHECK(states_collectives);

  const sy_norm& n = *plugin->norm;
  CHECK(n.struct_size == sizeof(sy_norm));
  CHECK(n.dtypes == (SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16));
  CHECK(n.devices == SY_DEVICE_BIT(kDLCUDA));
  CHECK(n.features == (SY_NORM_FEATURE_LAYER | SY_NORM_FEATURE_RMS | SY_NORM_FEATURE_L2 |
                       SY_NORM_FEATURE_ZERO_CENTERED_GAMMA | SY_NORM_FEATURE_RESIDUAL |
                       SY_NORM_FEATURE_MEMORY_EFFICIENT |
                       SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT | SY_FEATURE_GRAPH_CAPTURE));
  CHECK((n.features & SY_NORM_FEATURE_SM_MARGIN) == 0);
  CHECK(n.determinism == SY_DETERMINISTIC);
}

TEST_CASE("probe: OK with a Hopper GPU, otherwise UNAVAILABLE with the CUDA reason") {
  const sy_plugin* plugin = load();
  REQUIRE(plugin != nullptr);
  sy_error err = make_error();
  const sy_status status = plugin->probe(&err);
  if (status == SY_OK) {
    MESSAGE("a CUDA device of compute capability >= 9.0 is present: probe says OK");
    CHECK(err.message[0] == '\0');
    return;
  }
  CAPTURE(err.message);
  CHECK(status == SY_ERR_UNAVAILABLE);
  CHECK(err.status == SY_ERR_UNAVAILABLE);
  const std::string why = err.message;
  const bool names_cause =
      why.find("cudaGetDeviceCount failed with cudaError") != std::string::npos ||
      why.find("no CUDA device is visible") != std::string::npos ||
      why.find("no CUDA device of compute capability 9.0") != std::string::npos;
  CHECK(names_cause);
  if (why.find("cudaGetDeviceCount failed") != std::string::npos)
    CHECK(why.find("compute capability 9.0 or newer") != std::string::npos);
  // The probe may be asked often: same answer, no crash, NULL err accepted.
  CHECK(plugin->probe(nullptr) == SY_ERR_UNAVAILABLE);
}

TEST_CASE("exports: only sy_plugin_v1; the CUDA runtime is inside, hidden, not a dependency") {
  void* handle = library();
  CHECK(dlsym(handle, "sy_plugin_v1") != nullptr);
  for (const char* hidden : {"cudaGetDeviceCount", "cudaLaunchKernel", "cudaMemcpyAsync",
                             "__cudaRegisterFatBinary"}) {
    CAPTURE(hidden);
    CHECK(dlsym(handle, hidden) == nullptr);
  }
  // Nothing in this test binary links libcudart: had the plugin needed it, it would be loaded.
  for (const char* shared_runtime : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
    CAPTURE(shared_runtime);
    void* loaded = dlopen(shared_runtime, RTLD_LAZY | RTLD_NOLOAD);
    CHECK(loaded == nullptr);
    if (loaded != nullptr) dlclose(loaded);
  }
}

TEST_CASE("forward_collectives: MAX + SUM, plus MIN for the argmax; none without TP or rows") {
  const sy_plugin* plugin = load();
  REQUIRE(plugin != nullptr);
  auto count = plugin->cross_entropy->forward_collectives;
  sy_ce_problem p = ce_problem(64, 1000);
  CHECK(count(&p) == 0);
  p.flags = SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD;
  CHECK(count(&p) == 0);
  p.tp_size = 2;
  p.vocab_local = 500;
  p.vocab_start = 500;
  p.flags = 0;
  CHECK(count(&p) == 2);
  p.flags = SY_CE_GRAD_IN_FORWARD | SY_CE_IGNORE_INDEX | SY_CE_CHECK_LABELS;
  CHECK(count(&p) == 2);
  p.flags = SY_CE_ARGMAX;
  CHECK(count(&p) == 3);
  p.rows = 0;
  CHECK(count(&p) == 0);
  CHECK(count(nullptr) == -1);
  p.struct_size = 8;
  CHECK(count(&p) == -1);
}
