// supports() and workspace_size(): every refusal names the field, the value and what works;
// a valid CUDA problem is SY_OK where a GPU is, and UNAVAILABLE with probe's reason here.
#include "apex_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "plan.hpp"

using namespace apex_test;

namespace {

sy_status supports(const sy_norm_problem& p, sy_error& err) { return norm().supports(&p, &err); }

void check_valid(const sy_norm_problem& p) {
  sy_error err = make_error();
  const sy_status status = supports(p, err);
  INFO("message: " << err.message);
  if (can_run_here()) {
    CHECK(status == SY_OK);
  } else {
    CHECK(status == SY_ERR_UNAVAILABLE);
    CHECK(std::string(err.message).find("problem.device = cuda:0") != std::string::npos);
    CHECK(std::string(err.message).find(probe_message()) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("valid problems pass every check that does not need the machine") {
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2}) {
    CAPTURE(kind);
    check_valid(make_problem(kind));
    for (int64_t hidden : {1, 127, 1024, 5120, 7168, 65536, 100000}) {
      CAPTURE(hidden);
      check_valid(make_problem(kind, 3, hidden));
    }
    check_valid(make_problem(kind, 0, 64));  // no rows
    for (uint32_t flags : {SY_NORM_ZERO_CENTERED_GAMMA, SY_NORM_MEMORY_EFFICIENT,
                           SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_MEMORY_EFFICIENT}) {
      sy_norm_problem p = make_problem(kind);
      p.flags = flags;
      check_valid(p);
    }
    sy_norm_problem accumulate = make_problem(kind);
    accumulate.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
    accumulate.grad_weight_dtype = sy::kF32;
    check_valid(accumulate);
    sy_norm_problem margin = make_problem(kind);
    margin.sm_margin = 16;
    check_valid(margin);
  }
}

TEST_CASE("dtypes: x in float32/bfloat16/float16, y as x or float32, any weight dtype") {
  for (DLDataType x : {sy::kF32, sy::kBF16, sy::kF16}) {
    sy_norm_problem p = make_problem();
    p.x_dtype = p.y_dtype = x;
    check_valid(p);
    p.y_dtype = sy::kF32;
    check_valid(p);
    for (DLDataType w : {sy::kF32, sy::kBF16, sy::kF16}) {
      p.weight_dtype = p.grad_weight_dtype = w;
      check_valid(p);
    }
  }
  sy_error err = make_error();
  sy_norm_problem p = make_problem();
  p.y_dtype = sy::kF16;  // bf16 x, fp16 y
  check_refusal(supports(p, err), err, SY_ERR_UNSUPPORTED,
                {"problem.y_dtype = float16", "x_dtype = bfloat16",
                 "apex writes y in x's dtype or in float32"});
  p = make_problem();
  p.x_dtype = sy::kF64;
  check_refusal(supports(p, err), err, SY_ERR_UNSUPPORTED,
                {"problem.x_dtype = float64", "supported: float32, bfloat16, float16"});
  p = make_problem();
  p.weight_dtype = sy::kI32;
  check_refusal(supports(p, err), err, SY_ERR_UNSUPPORTED, {"problem.weight_dtype = int32"});
  p = make_problem();
  p.grad_weight_dtype = DLDataType{kDLFloat, 32, 4};
  check_refusal(supports(p, err), err, SY_ERR_UNSUPPORTED,
                {"problem.grad_weight_dtype = float32x4"});
  // L2Norm has no weights: their dtypes are not looked at.
  p = make_problem(SY_NORM_L2);
  p.weight_dtype = p.grad_weight_dtype = sy::kI64;
  check_valid(p);
}

TEST_CASE("the device: CUDA only, with the next step for CPU tensors") {
  sy_error err = make_error();
  sy_norm_problem p = make_problem();
  p.device = DLDevice{kDLCPU, 0};
  check_refusal(supports(p, err), err, SY_ERR_UNSUPPORTED,
                {"problem.device = cpu:0", "CUDA devices only", "native"});
  p.device = DLDevice{kDLCUDAHost, 0};
  check_refusal(supports(p, err), err, SY_ERR_UNSUPPORTED, {"problem.device = cuda_host:0"});
  if (!can_run_here()) {
    p.device = DLDevice{kDLCUDA, 3};
    check_refusal(supports(p, err), err, SY_ERR_UNAVAILABLE, {"problem.device = cuda:3"});
  }
}

TEST_CASE("what apex does not implement is UNSUPPORTED, saying so") {
  sy_error err = make_error();
  sy_norm_problem p = make_problem(SY_NORM_RMS);
  p.flags = SY_NORM_RESIDUAL;
  check_refusal(supports(p, err), err, SY_ERR_UNSUPPORTED,
                {"SY_NORM_RESIDUAL", "apex does not implement", "SY_NORM_FEATURE_RESIDUAL"});
  p.flags = 1u << 9;
  check_refusal(supports(p, err), err, SY_ERR_UNSUPPORTED,
                {"problem.flags has bits 0x200", "apex does not know"});
  p = make_problem(SY_NORM_LAYER, 2, (int64_t{1} << 30) + 1);
  check_refusal(supports(p, err), err, SY_ERR_UNSUPPORTED,
                {"problem.hidden = 1073741825", "limit of 1073741824"});
}

TEST_CASE("the caller's mistakes are INVALID_ARGUMENT, naming the field") {
  sy_error err = make_error();
  CHECK(norm().supports(nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(err.message) == "problem is NULL");

  sy_norm_problem p = make_problem();
  p.struct_size = sizeof p - 8;
  check_refusal(supports(p, err), err, SY_ERR_INVALID_ARGUMENT,
                {"problem.struct_size", "sizeof(sy_norm_problem)"});
  p = make_problem();
  p.kind = 3;
  check_refusal(supports(p, err), err, SY_ERR_INVALID_ARGUMENT,
                {"problem.kind = 3", "SY_NORM_LAYER (0)"});
  p = make_problem();
  p.rows = -1;
  check_refusal(supports(p, err), err, SY_ERR_INVALID_ARGUMENT, {"problem.rows = -1", ">= 0"});
  p = make_problem();
  p.hidden = 0;
  check_refusal(supports(p, err), err, SY_ERR_INVALID_ARGUMENT, {"problem.hidden = 0", ">= 1"});
  for (float eps : {0.0f, -1e-5f, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
    p = make_problem();
    p.eps = eps;
    check_refusal(supports(p, err), err, SY_ERR_INVALID_ARGUMENT,
                  {"problem.eps", "must be a finite number > 0"});
  }
  p = make_problem();
  p.sm_margin = -2;
  check_refusal(supports(p, err), err, SY_ERR_INVALID_ARGUMENT,
                {"problem.sm_margin = -2", ">= 0"});
  p = make_problem();
  p.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;  // grad_weight bf16
  check_refusal(supports(p, err), err, SY_ERR_INVALID_ARGUMENT,
                {"problem.grad_weight_dtype = bfloat16", "SY_NORM_ACCUMULATE_GRAD_WEIGHT",
                 "float32"});
}

TEST_CASE("workspace_size: the fp32 partial sums of dgamma (and dbeta), aligned") {
  namespace ap = switchyard::apex;
  sy_error err = make_error();
  auto bytes_of = [&](const sy_norm_problem& p) {
    int64_t bytes = -1;
    REQUIRE(norm().workspace_size(&p, &bytes, &err) == SY_OK);
    return bytes;
  };
  // bf16 [16384, 4096]: chunks of 32 rows (512 chunks), 512 x 4096 floats per region.
  const int64_t region = 512 * 4096 * 4;
  CHECK(bytes_of(make_problem(SY_NORM_LAYER, 16384, 4096)) == 256 + 2 * region);
  CHECK(bytes_of(make_problem(SY_NORM_RMS, 16384, 4096)) == 256 + region);
  CHECK(bytes_of(make_problem(SY_NORM_L2, 16384, 4096)) == 0);
  CHECK(bytes_of(make_problem(SY_NORM_LAYER, 0, 4096)) == 0);
  // Any hidden size: regions padded to 256 bytes.
  CHECK(bytes_of(make_problem(SY_NORM_RMS, 5, 127)) == 256 + ap::align_up(5 * 127 * 4, 256));
  // A region of partial sums stays within 8 MiB however many rows there are.
  for (int64_t hidden : {1024, 4096, 8192, 16384, 32768, 65536, 1 << 20}) {
    CAPTURE(hidden);
    const int64_t huge = bytes_of(make_problem(SY_NORM_LAYER, 1 << 22, hidden));
    CHECK(huge <= 256 + 2 * (int64_t{8} << 20));
    CHECK(huge == bytes_of(make_problem(SY_NORM_LAYER, (1 << 22) - 1, hidden)));
  }
  // It does not need the machine: the same answer here as on a GPU.
  CHECK(norm().workspace_size(nullptr, nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
  sy_norm_problem p = make_problem();
  CHECK(norm().workspace_size(&p, nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(err.message).find("bytes") != std::string::npos);
  p.hidden = -4;
  int64_t bytes = 7;
  check_refusal(norm().workspace_size(&p, &bytes, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"problem.hidden = -4"});
  CHECK(bytes == 7);
}
