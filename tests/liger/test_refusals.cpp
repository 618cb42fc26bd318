// forward/backward refusals: decided from the descriptors before any CUDA call, so they need
// no GPU (the tensors live at made-up addresses that are never dereferenced). Without a GPU a
// valid call fails cleanly with the CUDA reason.
#include "liger_support.hpp"

#include <doctest/doctest.h>

using namespace liger_test;

namespace {

constexpr uintptr_t kLogits = 0x10000000, kLabels = 0x20000000, kLoss = 0x21000000,
                    kLse = 0x22000000, kArgmax = 0x23000000, kScale = 0x24000000,
                    kGrad = 0x30000000, kWorkspace = 0x40000000;
constexpr int64_t kRows = 8, kVocab = 100;

struct CeCall {
  sy_ce_problem problem = ce_problem(kRows, kVocab);
  Fake logits{sy::kBF16, {kRows, kVocab}, kLogits};
  Fake labels{sy::kI64, {kRows}, kLabels};
  Fake loss{sy::kF32, {kRows}, kLoss};
  Fake lse{sy::kF32, {kRows}, kLse};
  Fake argmax{sy::kI64, {kRows}, kArgmax};
  Fake scale{sy::kF32, {kRows}, kScale};
  Fake grad{sy::kBF16, {kRows, kVocab}, kGrad};

  sy_ce_forward_args forward() {
    sy_ce_forward_args a{};
    a.struct_size = sizeof a;
    a.problem = &problem;
    a.logits = logits.dl();
    a.labels = labels.dl();
    a.loss = loss.dl();
    a.lse = lse.dl();
    return a;
  }
  sy_ce_backward_args backward() {
    sy_ce_backward_args a{};
    a.struct_size = sizeof a;
    a.problem = &problem;
    a.logits = logits.dl();
    a.labels = labels.dl();
    a.lse = lse.dl();
    a.grad_loss = scale.dl();
    a.grad_logits = grad.dl();
    return a;
  }
};

const sy_cross_entropy& ce() {
  const sy_plugin* plugin = load();
  REQUIRE(plugin != nullptr);
  return *plugin->cross_entropy;
}

const sy_norm& norm() {
  const sy_plugin* plugin = load();
  REQUIRE(plugin != nullptr);
  return *plugin->norm;
}

sy_status no_reduce(void*, const void*, void*, int64_t, DLDataType, sy_reduce_op, void*,
                    sy_error*) {
  return SY_OK;
}

}  // namespace

TEST_CASE("cross-entropy forward: tensors, flags, aliasing, workspace, communicator") {
  sy_error err = make_error();
  {
    CeCall c;
    sy_ce_forward_args a = c.forward();
    a.logits = nullptr;
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"logits is required but NULL"});
  }
  {
    CeCall c;
    Fake wrong{sy::kF32, {kRows, kVocab}, kLogits};
    sy_ce_forward_args a = c.forward();
    a.logits = wrong.dl();
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"logits has dtype float32, expected bfloat16"});
  }
  {
    CeCall c;
    Fake short_labels{sy::kI64, {kRows - 1}, kLabels};
    sy_ce_forward_args a = c.forward();
    a.labels = short_labels.dl();
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"labels has shape [7], expected [8]"});
  }
  {
    CeCall c;
    Fake host_loss{sy::kF32, {kRows}, kLoss, kCpu};
    sy_ce_forward_args a = c.forward();
    a.loss = host_loss.dl();
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"loss is on device cpu:0, expected cuda:0"});
  }
  {
    CeCall c;
    c.problem.flags = SY_CE_ARGMAX;
    sy_ce_forward_args a = c.forward();
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"argmax is NULL but problem.flags has SY_CE_ARGMAX"});
  }
  {
    CeCall c;
    c.problem.flags = SY_CE_GRAD_IN_FORWARD;
    sy_ce_forward_args a = c.forward();
    a.grad_logits = c.grad.dl();
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"grad_scale is NULL", "SY_CE_GRAD_IN_FORWARD"});
    a.grad_scale = c.scale.dl();
    a.grad_logits = nullptr;
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"grad_logits is NULL", "it may be the logits themselves"});
    // Two bytes off the logits: a partial overlap, never an in-place pair.
    Fake shifted{sy::kBF16, {kRows, kVocab}, kLogits + 2};
    a.grad_logits = shifted.dl();
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"grad_logits partly overlaps logits"});
    // The same memory as another dtype is refused too.
    c.problem.grad_dtype = sy::kF16;
    Fake as_half{sy::kF16, {kRows, kVocab}, kLogits};
    a.grad_logits = as_half.dl();
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"grad_logits partly overlaps logits", "float16", "bfloat16"});
  }
  {
    CeCall c;
    c.problem.flags = SY_CE_CHECK_LABELS;
    sy_ce_forward_args a = c.forward();
    a.workspace_bytes = 8;
    a.workspace = reinterpret_cast<void*>(kWorkspace);
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"workspace_bytes = 8 is too small", "liger needs 256 bytes"});
    a.workspace_bytes = 256;
    a.workspace = nullptr;
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"workspace is NULL", "256 bytes"});
    a.workspace = reinterpret_cast<void*>(kWorkspace + 8);
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"workspace is not 16-byte aligned"});
  }
  {
    CeCall c;
    c.problem.tp_size = 2;
    c.problem.vocab_size = 2 * kVocab;
    c.problem.vocab_start = kVocab;
    sy_ce_forward_args a = c.forward();
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"tp is NULL but problem.tp_size = 2"});
    sy_comm comm{};
    comm.struct_size = sizeof comm;
    comm.rank = 1;
    comm.size = 2;
    comm.device = kCpu;  // a thread group: host buffers only
    comm.all_reduce = no_reduce;
    a.tp = &comm;
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"tp->device = cpu:0", "cuda:0", "libswitchyard-nccl"});
    comm.device = kCuda;
    comm.size = 4;
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"tp->size = 4 but problem.tp_size = 2"});
    comm.size = 2;
    comm.all_reduce = nullptr;
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"tp->all_reduce is NULL"});
    comm.all_reduce = no_reduce;
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                  {"workspace_bytes = 0 is too small"});
  }
  {
    CeCall c;
    sy_ce_forward_args a = c.forward();
    a.struct_size = 8;
    check_refusal(ce().forward(&a, &err), err, SY_ERR_INVALID_ARGUMENT, {"args.struct_size = 8"});
    check_refusal(ce().forward(nullptr, &err), err, SY_ERR_INVALID_ARGUMENT, {"args is NULL"});
  }
}

TEST_CASE("cross-entropy backward: tensors and aliasing") {
  sy_error err = make_error();
  CeCall c;
  sy_ce_backward_args a = c.backward();
  a.grad_loss = nullptr;
  check_refusal(ce().backward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"grad_loss is required but NULL"});
  a = c.backward();
  Fake wrong_lse{sy::kBF16, {kRows}, kLse};
  a.lse = wrong_lse.dl();
  check_refusal(ce().backward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"lse has dtype bfloat16, expected float32"});
  a = c.backward();
  Fake strided_overlap{sy::kBF16, {kRows, kVocab}, kLogits + 100, kCuda, 2 * kVocab};
  a.grad_logits = strided_overlap.dl();
  check_refusal(ce().backward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"grad_logits partly overlaps logits"});
  a = c.backward();
  Fake overlapping_rows{sy::kBF16, {kRows, kVocab}, kGrad, kCuda, kVocab - 1};
  a.grad_logits = overlapping_rows.dl();
  check_refusal(ce().backward(&a, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"row stride 99", "rows overlap"});
}

TEST_CASE("norm forward and backward: parameters, flags, aliasing, workspace") {
  sy_error err = make_error();
  constexpr int64_t n = 8, h = 64;
  sy_norm_problem p = norm_problem(SY_NORM_RMS, n, h);
  Fake x{sy::kBF16, {n, h}, 0x10000000}, y{sy::kBF16, {n, h}, 0x11000000},
      w{sy::kBF16, {h}, 0x12000000}, b{sy::kBF16, {h}, 0x13000000},
      mean{sy::kF32, {n}, 0x14000000}, rstd{sy::kF32, {n}, 0x15000000},
      res{sy::kBF16, {n, h}, 0x16000000}, res_out{sy::kBF16, {n, h}, 0x17000000},
      dy{sy::kBF16, {n, h}, 0x18000000}, dx{sy::kBF16, {n, h}, 0x19000000},
      dw{sy::kBF16, {h}, 0x1a000000};
  sy_norm_forward_args f{};
  f.struct_size = sizeof f;
  f.problem = &p;
  f.x = x.dl();
  f.y = y.dl();
  f.rstd = rstd.dl();
  check_refusal(norm().forward(&f, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"weight is NULL", "RMSNorm needs gamma [64]"});
  f.weight = w.dl();
  f.bias = b.dl();
  check_refusal(norm().forward(&f, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"bias is set but problem.kind = RMSNorm has no beta"});
  f.bias = nullptr;
  f.residual = res.dl();
  check_refusal(norm().forward(&f, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"residual is set but problem.flags lacks SY_NORM_RESIDUAL"});
  p.flags = SY_NORM_RESIDUAL;
  f.residual_out = y.dl();  // the same memory as y
  check_refusal(norm().forward(&f, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"y overlaps residual_out"});
  f.residual_out = res_out.dl();
  f.rstd = nullptr;
  check_refusal(norm().forward(&f, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"rstd is NULL", "needed by the backward"});
  p = norm_problem(SY_NORM_LAYER, n, h);
  f = sy_norm_forward_args{};
  f.struct_size = sizeof f;
  f.problem = &p;
  f.x = x.dl();
  f.y = y.dl();
  f.weight = w.dl();
  f.rstd = rstd.dl();
  check_refusal(norm().forward(&f, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"mean is NULL but LayerNorm writes the row means"});

  p = norm_problem(SY_NORM_L2, n, h);
  sy_norm_backward_args g{};
  g.struct_size = sizeof g;
  g.problem = &p;
  g.dy = dy.dl();
  g.x_or_y = x.dl();
  g.rstd = rstd.dl();
  g.dx = dx.dl();
  g.dweight = dw.dl();
  check_refusal(norm().backward(&g, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"dweight is set but problem.kind = L2Norm has no gamma"});
  p = norm_problem(SY_NORM_RMS, n, h);
  g.weight = w.dl();
  check_refusal(norm().backward(&g, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"workspace_bytes = 0 is too small", "liger needs 256 bytes"});
  g.workspace = reinterpret_cast<void*>(0x40000000);
  g.workspace_bytes = 256;
  Fake dx_shifted{sy::kBF16, {n, h}, 0x18000000 + 64};
  g.dx = dx_shifted.dl();
  check_refusal(norm().backward(&g, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"dx partly overlaps dy"});
  g.dx = dx.dl();
  g.d_residual_out = res.dl();
  check_refusal(norm().backward(&g, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"d_residual_out is set but problem.flags lacks SY_NORM_RESIDUAL"});
}

TEST_CASE("without a GPU, a valid call fails cleanly with the CUDA reason") {
  if (gpu_available()) {
    MESSAGE("a GPU is present: the made-up addresses of this test must not reach a kernel");
    return;
  }
  sy_error err = make_error();
  CeCall c;
  sy_ce_forward_args a = c.forward();
  const sy_status status = ce().forward(&a, &err);
  CAPTURE(err.message);
  CHECK(status == SY_ERR_UNAVAILABLE);
  CHECK(std::string(err.message).find("cudaGetDevice failed") != std::string::npos);

  sy_norm_problem p = norm_problem(SY_NORM_RMS, 4, 16);
  Fake x{sy::kBF16, {4, 16}, 0x10000000}, y{sy::kBF16, {4, 16}, 0x11000000},
      w{sy::kBF16, {16}, 0x12000000}, rstd{sy::kF32, {4}, 0x15000000};
  sy_norm_forward_args f{};
  f.struct_size = sizeof f;
  f.problem = &p;
  f.x = x.dl();
  f.y = y.dl();
  f.weight = w.dl();
  f.rstd = rstd.dl();
  check_refusal(norm().forward(&f, &err), err, SY_ERR_UNAVAILABLE, {"cudaGetDevice failed"});
}
