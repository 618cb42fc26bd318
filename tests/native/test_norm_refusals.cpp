// Every normalization refusal: status and the message naming the argument.
#include "norm_harness.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include <functional>
#include <limits>

using namespace native_test;

namespace {

void refused_problem(const sy_norm_problem& base, const std::function<void(sy_norm_problem&)>& change,
                     sy_status status, std::initializer_list<const char*> fragments) {
  sy_norm_problem p = base;
  change(p);
  sy_error err = make_error();
  check_refusal(norm().supports(&p, &err), err, status, fragments);
  int64_t bytes = 0;
  check_refusal(norm().workspace_size(&p, &bytes, &err), err, status, fragments);
}

}  // namespace

TEST_CASE("norm supports() refuses impossible problems naming the field") {
  load_native();
  const sy_norm_problem good = make_norm_problem(SY_NORM_LAYER, 4, 16);
  sy_error err = make_error();
  CHECK(norm().supports(&good, &err) == SY_OK);
  check_refusal(norm().supports(nullptr, &err), err, SY_ERR_INVALID_ARGUMENT, {"problem is NULL"});
  refused_problem(good, [](sy_norm_problem& p) { p.struct_size = 8; }, SY_ERR_INVALID_ARGUMENT,
                  {"problem.struct_size = 8"});
  refused_problem(good, [](sy_norm_problem& p) { p.kind = 9; }, SY_ERR_INVALID_ARGUMENT,
                  {"problem.kind = 9"});
  refused_problem(good, [](sy_norm_problem& p) { p.hidden = 0; }, SY_ERR_INVALID_ARGUMENT,
                  {"problem.hidden = 0", ">= 1"});
  refused_problem(good, [](sy_norm_problem& p) { p.rows = -2; }, SY_ERR_INVALID_ARGUMENT,
                  {"problem.rows = -2"});
  refused_problem(good, [](sy_norm_problem& p) { p.eps = 0.0f; }, SY_ERR_INVALID_ARGUMENT,
                  {"problem.eps = 0 must", "> 0"});
  refused_problem(good, [](sy_norm_problem& p) { p.eps = -1e-5f; }, SY_ERR_INVALID_ARGUMENT,
                  {"problem.eps = -1e-05", "> 0"});
  refused_problem(good, [](sy_norm_problem& p) { p.eps = std::numeric_limits<float>::infinity(); },
                  SY_ERR_INVALID_ARGUMENT, {"problem.eps = inf"});
  refused_problem(good, [](sy_norm_problem& p) { p.sm_margin = -1; }, SY_ERR_INVALID_ARGUMENT,
                  {"problem.sm_margin = -1"});
  refused_problem(good, [](sy_norm_problem& p) { p.x_dtype = sy::kF64; }, SY_ERR_UNSUPPORTED,
                  {"problem.x_dtype = float64"});
  refused_problem(good, [](sy_norm_problem& p) { p.y_dtype = sy::kI32; }, SY_ERR_UNSUPPORTED,
                  {"problem.y_dtype = int32"});
  refused_problem(good, [](sy_norm_problem& p) { p.weight_dtype = sy::kF64; }, SY_ERR_UNSUPPORTED,
                  {"problem.weight_dtype = float64"});
  refused_problem(good, [](sy_norm_problem& p) {
                    p.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
                    p.grad_weight_dtype = sy::kBF16;
                  },
                  SY_ERR_INVALID_ARGUMENT, {"problem.grad_weight_dtype = bfloat16", "float32"});
  refused_problem(good, [](sy_norm_problem& p) { p.flags = 1u << 12; }, SY_ERR_UNSUPPORTED,
                  {"problem.flags", "0x1000"});
  refused_problem(good, [](sy_norm_problem& p) { p.device = DLDevice{kDLCUDAHost, 1}; },
                  SY_ERR_UNSUPPORTED, {"problem.device = cuda_host:1", "native runs on"});
  // sm_margin has no meaning on the CPU: accepted and ignored.
  sy_norm_problem margin = good;
  margin.sm_margin = 8;
  CHECK(norm().supports(&margin, &err) == SY_OK);
}

TEST_CASE("norm forward refusals name the argument") {
  load_native();
  auto forward_with = [](NormSetup& s, const std::function<void(sy_norm_forward_args&)>& alter,
                         sy_error* err) {
    sy_norm_forward_args a = s.forward_args();
    alter(a);
    return norm().forward(&a, err);
  };
  sy_error err = make_error();
  const sy_norm_problem ln = make_norm_problem(SY_NORM_LAYER, 4, 16, sy::kBF16);
  NormSetup s(ln, random_norm_data(ln, 1));
  Tensor wrong_rows(sy::kBF16, {5, 16});
  Tensor f32_rows(sy::kF32, {4, 16});
  Tensor short_vector(sy::kBF16, {15});
  Tensor stats_bf16(sy::kBF16, {4});

  check_refusal(forward_with(s, [](sy_norm_forward_args& a) { a.x = nullptr; }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"x is required but NULL"});
  check_refusal(forward_with(s, [&](sy_norm_forward_args& a) { a.x = wrong_rows.dl(); }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"x has shape [5, 16], expected [4, 16]"});
  check_refusal(forward_with(s, [&](sy_norm_forward_args& a) { a.y = f32_rows.dl(); }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"y has dtype float32, expected bfloat16"});
  check_refusal(forward_with(s, [](sy_norm_forward_args& a) { a.weight = nullptr; }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"weight is NULL", "LayerNorm", "gamma [16]"});
  check_refusal(forward_with(s, [&](sy_norm_forward_args& a) { a.weight = short_vector.dl(); }, &err),
                err, SY_ERR_INVALID_ARGUMENT, {"weight has shape [15], expected [16]"});
  check_refusal(forward_with(s, [&](sy_norm_forward_args& a) { a.bias = short_vector.dl(); }, &err),
                err, SY_ERR_INVALID_ARGUMENT, {"bias has shape [15], expected [16]"});
  check_refusal(forward_with(s, [](sy_norm_forward_args& a) { a.mean = nullptr; }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"mean is NULL", "LayerNorm"});
  check_refusal(forward_with(s, [&](sy_norm_forward_args& a) { a.rstd = stats_bf16.dl(); }, &err),
                err, SY_ERR_INVALID_ARGUMENT, {"rstd has dtype bfloat16, expected float32"});
  check_refusal(forward_with(s, [](sy_norm_forward_args& a) { a.rstd = nullptr; }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"rstd is NULL"});
  check_refusal(forward_with(s, [&](sy_norm_forward_args& a) { a.residual = s.residual.dl(); }, &err),
                err, SY_ERR_INVALID_ARGUMENT, {"residual is set", "lacks SY_NORM_RESIDUAL"});
  check_refusal(forward_with(s, [](sy_norm_forward_args& a) { a.workspace_bytes = 8; }, &err), err,
                SY_ERR_INVALID_ARGUMENT,
                {"workspace_bytes = 8", ("needs " + std::to_string(s.workspace_bytes)).c_str()});
  check_refusal(forward_with(s, [](sy_norm_forward_args& a) { a.struct_size = 8; }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"args.struct_size = 8"});
  check_refusal(norm().forward(nullptr, &err), err, SY_ERR_INVALID_ARGUMENT, {"args is NULL"});
  {
    Tensor other_device(sy::kBF16, {4, 16});
    DLTensor moved = *other_device.dl();
    moved.device = DLDevice{kDLCUDA, 0};
    check_refusal(forward_with(s, [&](sy_norm_forward_args& a) { a.x = &moved; }, &err), err,
                  SY_ERR_INVALID_ARGUMENT, {"x is on device cuda:0, expected cpu:0"});
  }

  const sy_norm_problem rms = make_norm_problem(SY_NORM_RMS, 4, 16, sy::kBF16, SY_NORM_RESIDUAL);
  NormSetup r(rms, random_norm_data(rms, 2));
  check_refusal(forward_with(r, [&](sy_norm_forward_args& a) { a.bias = r.bias.dl(); }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"bias is set", "RMSNorm has no beta"});
  check_refusal(forward_with(r, [](sy_norm_forward_args& a) { a.weight = nullptr; }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"weight is NULL", "RMSNorm"});
  check_refusal(forward_with(r, [](sy_norm_forward_args& a) { a.residual = nullptr; }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"residual is NULL", "SY_NORM_RESIDUAL"});
  check_refusal(forward_with(r, [](sy_norm_forward_args& a) { a.residual_out = nullptr; }, &err),
                err, SY_ERR_INVALID_ARGUMENT, {"residual_out is NULL", "SY_NORM_RESIDUAL"});
  check_refusal(forward_with(r, [&](sy_norm_forward_args& a) { a.residual_out = a.y; }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"y overlaps residual_out"});

  const sy_norm_problem l2 = make_norm_problem(SY_NORM_L2, 4, 16, sy::kF32);
  NormSetup l(l2, random_norm_data(l2, 3));
  check_refusal(forward_with(l, [&](sy_norm_forward_args& a) { a.weight = l.weight.dl(); }, &err), err,
                SY_ERR_INVALID_ARGUMENT, {"weight is set", "L2Norm has no gamma"});
}

TEST_CASE("norm backward refusals name the argument") {
  load_native();
  sy_error err = make_error();
  auto backward_with = [&](NormSetup& s, const std::function<void(sy_norm_backward_args&)>& alter) {
    sy_norm_backward_args a = s.backward_args();
    alter(a);
    return norm().backward(&a, &err);
  };
  const sy_norm_problem ln = make_norm_problem(SY_NORM_LAYER, 4, 16, sy::kF32);
  NormSetup s(ln, random_norm_data(ln, 1));
  sy_norm_forward_args f = s.forward_args();
  REQUIRE(norm().forward(&f, &err) == SY_OK);
  Tensor short_vector(sy::kF32, {8});
  check_refusal(backward_with(s, [](sy_norm_backward_args& a) { a.dy = nullptr; }), err,
                SY_ERR_INVALID_ARGUMENT, {"dy is required but NULL"});
  check_refusal(backward_with(s, [](sy_norm_backward_args& a) { a.mean = nullptr; }), err,
                SY_ERR_INVALID_ARGUMENT, {"mean is NULL", "LayerNorm backward"});
  check_refusal(backward_with(s, [](sy_norm_backward_args& a) { a.rstd = nullptr; }), err,
                SY_ERR_INVALID_ARGUMENT, {"rstd is NULL"});
  check_refusal(backward_with(s, [](sy_norm_backward_args& a) { a.dx = nullptr; }), err,
                SY_ERR_INVALID_ARGUMENT, {"dx is required but NULL"});
  check_refusal(backward_with(s, [&](sy_norm_backward_args& a) { a.dweight = short_vector.dl(); }),
                err, SY_ERR_INVALID_ARGUMENT, {"dweight has shape [8], expected [16]"});
  check_refusal(backward_with(s, [&](sy_norm_backward_args& a) { a.d_residual_out = s.d_residual_out.dl(); }),
                err, SY_ERR_INVALID_ARGUMENT, {"d_residual_out is set", "lacks SY_NORM_RESIDUAL"});
  check_refusal(backward_with(s, [&](sy_norm_backward_args& a) { a.dbias = a.dweight; }), err,
                SY_ERR_INVALID_ARGUMENT, {"dweight overlaps dbias"});
  CHECK(std::isnan(s.dx.get(0, 0)));  // nothing written by any refused call

  const sy_norm_problem rms = make_norm_problem(SY_NORM_RMS, 4, 16, sy::kF32);
  NormSetup r(rms, random_norm_data(rms, 2));
  check_refusal(backward_with(r, [&](sy_norm_backward_args& a) { a.dbias = r.dbias.dl(); }), err,
                SY_ERR_INVALID_ARGUMENT, {"dbias is set", "RMSNorm has no beta"});
  const sy_norm_problem l2 = make_norm_problem(SY_NORM_L2, 4, 16, sy::kF32);
  NormSetup l(l2, random_norm_data(l2, 3));
  check_refusal(backward_with(l, [&](sy_norm_backward_args& a) { a.dweight = l.dweight.dl(); }), err,
                SY_ERR_INVALID_ARGUMENT, {"dweight is set", "L2Norm has no gamma"});

  // Memory-efficient backward needs gamma_eff != 0 everywhere.
  for (uint32_t centred : {0u, unsigned{SY_NORM_ZERO_CENTERED_GAMMA}}) {
    const sy_norm_problem me = make_norm_problem(SY_NORM_RMS, 4, 16, sy::kF32, SY_NORM_MEMORY_EFFICIENT | centred);
    NormSetup m(me, random_norm_data(me, 4));
    m.weight.set(5, centred ? -1.0 : 0.0);
    sy_norm_forward_args mf = m.forward_args();
    REQUIRE(norm().forward(&mf, &err) == SY_OK);
    check_refusal(backward_with(m, [](sy_norm_backward_args&) {}), err, SY_ERR_INVALID_ARGUMENT,
                  {"weight[5]", "gamma_eff = 0", "SY_NORM_MEMORY_EFFICIENT"});
    CHECK(std::isnan(m.dx.get(0, 0)));
  }
}
