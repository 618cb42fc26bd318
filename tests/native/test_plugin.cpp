// The native plugin's descriptor, its entry point and the threads option.
#include "native_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

using namespace native_test;

TEST_CASE("descriptor: name, version, vendor, capabilities, determinism, build info") {
  const sy_plugin* plugin = load_native();
  REQUIRE(plugin != nullptr);
  CHECK(plugin->struct_size == sizeof(sy_plugin));
  CHECK(plugin->abi_major == SY_ABI_MAJOR);
  CHECK(plugin->abi_minor == SY_ABI_MINOR);
  CHECK(std::string(plugin->name) == "native");
  CHECK(std::string(plugin->version) == "0.1.0");
  CHECK(std::string(plugin->vendor) == "Switchyard");
  CHECK(std::strlen(plugin->description) > 10);
  REQUIRE(plugin->build_info != nullptr);
#if SWITCHYARD_TEST_NATIVE_CUDA
  CHECK(std::string(plugin->build_info).find("CUDA path: unfused kernels for CUDA architectures") !=
        std::string::npos);
  constexpr uint32_t kDevices = SY_DEVICE_BIT(kDLCPU) | SY_DEVICE_BIT(kDLCUDA);
#else
  CHECK(std::string(plugin->build_info).find("CUDA path: not built") != std::string::npos);
  constexpr uint32_t kDevices = SY_DEVICE_BIT(kDLCPU);
#endif
  sy_error err = make_error();
  CHECK(plugin->probe(&err) == SY_OK);

  const sy_cross_entropy& c = *plugin->cross_entropy;
  CHECK(c.struct_size == sizeof(sy_cross_entropy));
  CHECK(c.dtypes == (SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16));
  CHECK(c.devices == kDevices);
  CHECK(c.features == (SY_CE_FEATURE_LABEL_SMOOTHING | SY_CE_FEATURE_IGNORE_INDEX |
                       SY_CE_FEATURE_ARGMAX | SY_CE_FEATURE_GRAD_IN_FORWARD |
                       SY_CE_FEATURE_TENSOR_PARALLEL));
  CHECK(c.determinism == SY_DETERMINISTIC);
  const bool declares_collectives = c.forward_collectives != nullptr;
  CHECK(declares_collectives);

  const sy_norm& n = *plugin->norm;
  CHECK(n.struct_size == sizeof(sy_norm));
  CHECK(n.dtypes == (SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16));
  CHECK(n.devices == kDevices);
  CHECK(n.features == (SY_NORM_FEATURE_LAYER | SY_NORM_FEATURE_RMS | SY_NORM_FEATURE_L2 |
                       SY_NORM_FEATURE_ZERO_CENTERED_GAMMA | SY_NORM_FEATURE_RESIDUAL |
                       SY_NORM_FEATURE_MEMORY_EFFICIENT | SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT));
  CHECK((n.features & SY_NORM_FEATURE_SM_MARGIN) == 0);
  CHECK(n.determinism == SY_DETERMINISTIC);
}

TEST_CASE("a bad threads option makes the entry refuse, saying why") {
  for (const char* bad : {"zero", "0", "-3", "4x", "100000"}) {
    CAPTURE(bad);
    clear_host_log();
    CHECK(load_native(bad) == nullptr);
    const std::vector<std::string> lines = host_log();
    const bool explained = std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.rfind("ERROR [native]", 0) == 0 && l.find(std::string("native.threads = \"") + bad) != std::string::npos &&
             l.find("[1, 1024]") != std::string::npos;
    });
    CHECK(explained);
  }
  CHECK(load_native("3") != nullptr);
  CHECK(load_native() != nullptr);
}

TEST_CASE("the entry point works without a host, or with a host that offers nothing") {
  CHECK(call_entry(nullptr) != nullptr);
  const sy_host bare = {sizeof(sy_host), SY_ABI_MAJOR, SY_ABI_MINOR, "bare", nullptr, nullptr};
  const sy_plugin* plugin = call_entry(&bare);
  REQUIRE(plugin != nullptr);
  // Still computes (with the default thread count).
  sy_error err = make_error();
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = 1;
  p.vocab_local = p.vocab_size = 4;
  p.logits_dtype = p.grad_dtype = sy::kF32;
  p.label_dtype = sy::kI64;
  p.device = DLDevice{kDLCPU, 0};
  p.tp_size = 1;
  CHECK(plugin->cross_entropy->supports(&p, &err) == SY_OK);
  load_native();
}
