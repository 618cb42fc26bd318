// forward() and backward() refuse wrong arguments before touching the device, naming the
// argument and what was expected; with right arguments they get as far as this machine allows.
#include "apex_support.hpp"

#include <doctest/doctest.h>

using namespace apex_test;

namespace {

sy_status forward(const sy_norm_forward_args& a, sy_error& err) {
  return norm().forward(&a, &err);
}
sy_status backward(const sy_norm_backward_args& a, sy_error& err) {
  return norm().backward(&a, &err);
}

}  // namespace

TEST_CASE("right arguments pass every check that does not need a GPU") {
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2}) {
    for (uint32_t flags : {0u, SY_NORM_MEMORY_EFFICIENT | SY_NORM_ZERO_CENTERED_GAMMA}) {
      CAPTURE(kind);
      CAPTURE(flags);
      sy_norm_problem p = make_problem(kind, 4, 1000);
      p.flags = flags;
      NormCall call(p);
      sy_error err = make_error();
      check_passed_argument_checks(forward(call.forward_args(), err), err);
      check_passed_argument_checks(backward(call.backward_args(), err), err);
    }
  }
  // In place (y over x, dx over dy) is allowed: the very same tensor.
  NormCall call(make_problem(SY_NORM_RMS));
  sy_error err = make_error();
  sy_norm_forward_args f = call.forward_args();
  f.y = call.x.dl();
  check_passed_argument_checks(forward(f, err), err);
  sy_norm_backward_args b = call.backward_args();
  b.dx = call.dy.dl();
  check_passed_argument_checks(backward(b, err), err);
  // No dweight/dbias: no workspace needed.
  b = call.backward_args();
  b.dweight = nullptr;
  b.workspace = nullptr;
  b.workspace_bytes = 0;
  check_passed_argument_checks(backward(b, err), err);
}

TEST_CASE("forward: structure and tensors") {
  sy_error err = make_error();
  CHECK(norm().forward(nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(err.message) == "args is NULL");

  NormCall call(make_problem(SY_NORM_LAYER, 4, 1024));
  sy_norm_forward_args a = call.forward_args();
  a.struct_size = 16;
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"args.struct_size = 16", "sizeof(sy_norm_forward_args)"});
  a = call.forward_args();
  a.problem = nullptr;
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"args.problem is NULL"});

  a = call.forward_args();
  a.x = nullptr;
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"x is required but NULL"});

  Descriptor wrong_shape(sy::kBF16, {4, 1000});
  a = call.forward_args();
  a.x = wrong_shape.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"x has shape [4, 1000], expected [4, 1024]"});

  Descriptor wrong_dtype(sy::kF16, {4, 1024}, 0, DLDevice{kDLCUDA, 0}, 0x30000000);
  a = call.forward_args();
  a.y = wrong_dtype.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"y has dtype float16, expected bfloat16"});

  Descriptor on_cpu(sy::kBF16, {4, 1024}, 0, DLDevice{kDLCPU, 0});
  a = call.forward_args();
  a.x = on_cpu.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"x is on device cpu:0, expected cuda:0"});

  Descriptor column_strided(sy::kBF16, {4, 1024}, 0);
  int64_t strides[2] = {2048, 2};
  column_strided.tensor().strides = strides;
  a = call.forward_args();
  a.x = column_strided.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"x has last-dimension stride 2, expected 1"});

  a = call.forward_args();
  a.weight = nullptr;
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"weight is NULL", "LayerNorm needs gamma [1024]"});
  a = call.forward_args();
  a.mean = nullptr;
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"mean is NULL", "LayerNorm writes the row means", "float32 [4]"});
  a = call.forward_args();
  a.rstd = nullptr;
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"rstd is NULL", "float32 [4]"});
  Descriptor half_rstd(sy::kF16, {4});
  a = call.forward_args();
  a.rstd = half_rstd.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"rstd has dtype float16, expected float32"});
}

TEST_CASE("forward: weights follow the kind") {
  sy_error err = make_error();
  NormCall l2(make_problem(SY_NORM_L2));
  sy_norm_forward_args a = l2.forward_args();
  a.weight = l2.weight.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"weight is set but problem.kind = L2Norm has no gamma"});
  NormCall rms(make_problem(SY_NORM_RMS));
  a = rms.forward_args();
  a.bias = rms.bias.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"bias is set but problem.kind = RMSNorm has no beta"});
  // LayerNorm's bias is optional; its dtype is the weight dtype.
  NormCall layer(make_problem(SY_NORM_LAYER));
  a = layer.forward_args();
  a.bias = nullptr;
  check_passed_argument_checks(forward(a, err), err);
  Descriptor f32_bias(sy::kF32, {1024});
  a = layer.forward_args();
  a.bias = f32_bias.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"bias has dtype float32, expected bfloat16"});
}

TEST_CASE("forward: residual tensors are refused (apex has no fused residual)") {
  sy_error err = make_error();
  NormCall call(make_problem(SY_NORM_RMS));
  sy_norm_forward_args a = call.forward_args();
  a.residual = call.dy.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"residual is set", "lacks SY_NORM_RESIDUAL", "apex does not implement"});
  a = call.forward_args();
  a.residual_out = call.dx.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"residual_out is set"});
  call.problem.flags = SY_NORM_RESIDUAL;
  a = call.forward_args();
  check_refusal(forward(a, err), err, SY_ERR_UNSUPPORTED, {"SY_NORM_RESIDUAL"});
}

TEST_CASE("forward: overlaps other than exact in-place are refused") {
  sy_error err = make_error();
  NormCall call(make_problem(SY_NORM_RMS, 4, 1024));
  // y starts one row into x.
  Descriptor shifted(sy::kBF16, {4, 1024}, 0, DLDevice{kDLCUDA, 0}, 0x10000000 + 2048);
  sy_norm_forward_args a = call.forward_args();
  a.y = shifted.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"y partly overlaps x", "very same tensor"});
  // Same address, but float32 y over bfloat16 x is not in place.
  call.problem.y_dtype = sy::kF32;
  Descriptor wide(sy::kF32, {4, 1024}, 0, DLDevice{kDLCUDA, 0}, 0x10000000);
  a = call.forward_args();
  a.y = wide.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"y partly overlaps x"});
  // rstd inside y.
  call.problem.y_dtype = sy::kBF16;
  Descriptor rstd_in_y(sy::kF32, {4}, 0, DLDevice{kDLCUDA, 0}, 0x30000000 + 64);
  a = call.forward_args();
  a.rstd = rstd_in_y.dl();
  check_refusal(forward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"rstd overlaps y"});
}

TEST_CASE("backward: tensors, statistics and gradients") {
  sy_error err = make_error();
  CHECK(norm().backward(nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(err.message) == "args is NULL");

  NormCall call(make_problem(SY_NORM_LAYER, 4, 1024));
  sy_norm_backward_args a = call.backward_args();
  a.struct_size = 8;
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"args.struct_size = 8", "sizeof(sy_norm_backward_args)"});
  a = call.backward_args();
  a.dy = nullptr;
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"dy is required but NULL"});
  a = call.backward_args();
  a.mean = nullptr;
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"mean is NULL", "LayerNorm backward needs the row means"});
  a = call.backward_args();
  a.rstd = nullptr;
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"rstd is NULL"});
  a = call.backward_args();
  a.d_residual_out = call.dy.dl();
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"d_residual_out is set", "SY_NORM_RESIDUAL"});
  Descriptor f32_dx(sy::kF32, {4, 1024});
  a = call.backward_args();
  a.dx = f32_dx.dl();
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"dx has dtype float32, expected bfloat16"});
  Descriptor short_dweight(sy::kBF16, {1000});
  a = call.backward_args();
  a.dweight = short_dweight.dl();
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"dweight has shape [1000], expected [1024]"});
  Descriptor dbias_over_dweight(sy::kBF16, {1024}, 0, DLDevice{kDLCUDA, 0}, 0x61000000 + 512);
  a = call.backward_args();
  a.dbias = dbias_over_dweight.dl();
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"dweight overlaps dbias"});
  Descriptor dx_shifted(sy::kBF16, {4, 1024}, 0, DLDevice{kDLCUDA, 0}, 0x50000000 + 16);
  a = call.backward_args();
  a.dx = dx_shifted.dl();
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT, {"dx partly overlaps dy"});

  NormCall rms(make_problem(SY_NORM_RMS));
  a = rms.backward_args();
  a.dbias = rms.dbias.dl();
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"dbias is set but problem.kind = RMSNorm has no beta"});
  NormCall l2(make_problem(SY_NORM_L2));
  a = l2.backward_args();
  a.dweight = l2.dweight.dl();
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"dweight is set but problem.kind = L2Norm has no gamma"});
}

TEST_CASE("backward: memory-efficient mode reads y (y dtype) and needs no mean") {
  sy_error err = make_error();
  sy_norm_problem p = make_problem(SY_NORM_LAYER, 4, 1024);
  p.flags = SY_NORM_MEMORY_EFFICIENT;
  p.y_dtype = sy::kF32;
  NormCall call(p);
  sy_norm_backward_args a = call.backward_args();
  a.mean = nullptr;
  check_passed_argument_checks(backward(a, err), err);
  Descriptor x_dtype_input(sy::kBF16, {4, 1024}, 0, DLDevice{kDLCUDA, 0}, 0x51000000);
  a.x_or_y = x_dtype_input.dl();
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"x_or_y has dtype bfloat16, expected float32"});
}

TEST_CASE("backward: the workspace dgamma/dbeta need") {
  sy_error err = make_error();
  NormCall call(make_problem(SY_NORM_LAYER, 300, 1024));
  sy_norm_backward_args a = call.backward_args();
  const int64_t needed = a.workspace_bytes;
  REQUIRE(needed > 0);
  a.workspace_bytes = needed - 1;
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {("workspace_bytes = " + std::to_string(needed - 1)).c_str(),
                 ("the " + std::to_string(needed) + " bytes workspace_size() asks for").c_str()});
  a = call.backward_args();
  a.workspace = nullptr;
  check_refusal(backward(a, err), err, SY_ERR_INVALID_ARGUMENT,
                {"workspace is NULL", std::to_string(needed).c_str()});
  // The forward needs none.
  sy_norm_forward_args f = call.forward_args();
  f.workspace = nullptr;
  check_passed_argument_checks(forward(f, err), err);
}
