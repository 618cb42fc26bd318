// apex's descriptor, what it declares, and probe's answer on this machine.
#include "apex_support.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>

using namespace apex_test;

TEST_CASE("descriptor: name, version, vendor, build info; norms only") {
  const sy_plugin* plugin = load_apex();
  CHECK(plugin->struct_size == sizeof(sy_plugin));
  CHECK(plugin->abi_major == SY_ABI_MAJOR);
  CHECK(plugin->abi_minor == SY_ABI_MINOR);
  CHECK(std::string(plugin->name) == "apex");
  CHECK(std::string(plugin->version) == "0.1.0");
  CHECK(std::string(plugin->vendor) == "Switchyard");
  CHECK(std::strlen(plugin->description) > 20);
  CHECK(plugin->cross_entropy == nullptr);
  REQUIRE(plugin->norm != nullptr);
  REQUIRE(plugin->build_info != nullptr);
  const std::string build = plugin->build_info;
  CHECK(build.find("linked statically") != std::string::npos);
  CHECK(build.find("architectures 90") != std::string::npos);
}

TEST_CASE("the norm table declares what apex implements, and no more") {
  const sy_norm& n = norm();
  CHECK(n.struct_size == sizeof(sy_norm));
  CHECK(n.dtypes == (SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16));
  CHECK(n.devices == SY_DEVICE_BIT(kDLCUDA));
  CHECK((n.devices & SY_DEVICE_BIT(kDLCPU)) == 0);
  CHECK(n.features == (SY_NORM_FEATURE_LAYER | SY_NORM_FEATURE_RMS | SY_NORM_FEATURE_L2 |
                       SY_NORM_FEATURE_ZERO_CENTERED_GAMMA | SY_NORM_FEATURE_MEMORY_EFFICIENT |
                       SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT | SY_NORM_FEATURE_SM_MARGIN |
                       SY_FEATURE_GRAPH_CAPTURE));
  CHECK((n.features & SY_NORM_FEATURE_RESIDUAL) == 0);
  CHECK(n.determinism == SY_DETERMINISTIC);
  const bool all_entries = n.supports != nullptr && n.workspace_size != nullptr &&
                           n.forward != nullptr && n.backward != nullptr;
  CHECK(all_entries);
}

TEST_CASE("probe: OK with a GPU, otherwise UNAVAILABLE naming what CUDA said") {
  sy_error err = make_error();
  const sy_status status = load_apex()->probe(&err);
  INFO("probe: " << err.message);
  if (status == SY_OK) {
    CHECK(err.status == SY_OK);
    CHECK(std::string(err.message).empty());
  } else {
    // This machine (the CI and the development machine) has no GPU and no driver.
    CHECK(status == SY_ERR_UNAVAILABLE);
    CHECK(err.status == SY_ERR_UNAVAILABLE);
    const std::string message = err.message;
    CHECK(message.find("apex needs a CUDA GPU") != std::string::npos);
    CHECK(message.find("cudaGetDeviceCount") != std::string::npos);
    CHECK(message.find("cudaError") != std::string::npos);  // the error's name, e.g.
                                                             // cudaErrorInsufficientDriver
    CHECK(message.find("native") != std::string::npos);     // the next step
  }
  // Asked again: the same answer (it is cached), and a NULL err is fine.
  sy_error again = make_error();
  CHECK(load_apex()->probe(&again) == status);
  CHECK(std::string(again.message) == err.message);
  CHECK(load_apex()->probe(nullptr) == status);
}

TEST_CASE("an old, shorter sy_error gets the status but no message") {
  sy_error err = make_error();
  err.struct_size = offsetof(sy_error, message);
  std::memset(err.message, 'z', sizeof err.message);
  sy_norm_problem p = make_problem();
  p.kind = 9;
  CHECK(norm().supports(&p, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(err.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(err.message[0] == 'z');
}
