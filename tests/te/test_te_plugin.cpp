// The te plugin on a machine with or without a GPU: it loads, describes itself, says whether it
// can run here (and why not), answers supports() and workspace_size() for CUDA problems, and
// refuses bad calls with messages that name the argument — all before touching a GPU.
#include "te_fixture.hpp"
#include "test_paths.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <set>
#include <sstream>
#include <string>

using namespace te_test;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Result ce_supports(const sy_ce_problem& p) {
  sy_error err = make_error();
  return result_of(te().ce().supports(&p, &err), err);
}

Result norm_supports(const sy_norm_problem& p) {
  sy_error err = make_error();
  return result_of(te().norm().supports(&p, &err), err);
}

int64_t ce_workspace(const sy_ce_problem& p) {
  sy_error err = make_error();
  int64_t bytes = -1;
  REQUIRE_MESSAGE(te().ce().workspace_size(&p, &bytes, &err) == SY_OK, err.message);
  return bytes;
}

int64_t norm_workspace(const sy_norm_problem& p) {
  sy_error err = make_error();
  int64_t bytes = -1;
  REQUIRE_MESSAGE(te().norm().workspace_size(&p, &bytes, &err) == SY_OK, err.message);
  return bytes;
}

std::string run(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), &pclose);
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0) out.append(buffer.data(), n);
  return out;
}

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

}  // namespace

// ---- descriptor -------------------------------------------------------------------------------

TEST_CASE("te loads and describes itself") {
  const sy_plugin& p = *te().plugin;
  CHECK(p.struct_size == sizeof(sy_plugin));
  CHECK(p.abi_major == SY_ABI_MAJOR);
  CHECK(p.abi_minor == SY_ABI_MINOR);
  CHECK(std::string(p.name) == "te");
  CHECK(std::string(p.version).size() > 0);
  REQUIRE(p.build_info != nullptr);
  CHECK(contains(p.build_info, "CUDA"));
  CHECK(contains(p.build_info, "statically"));
  CHECK(static_cast<bool>(p.probe));
  REQUIRE(p.cross_entropy != nullptr);
  REQUIRE(p.norm != nullptr);
  bool announced = false;
  for (const std::string& line : logged()) announced = announced || contains(line, "te: te ");
  CHECK_MESSAGE(announced, "the entry logs its version through the host");
}

TEST_CASE("cross entropy: CUDA only, every dtype and feature, deterministic, graph-capturable") {
  const sy_cross_entropy& ce = te().ce();
  CHECK(ce.struct_size == sizeof(sy_cross_entropy));
  CHECK(ce.devices == SY_DEVICE_BIT(kDLCUDA));
  CHECK(ce.dtypes == (SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16));
  const uint32_t wanted = SY_CE_FEATURE_LABEL_SMOOTHING | SY_CE_FEATURE_IGNORE_INDEX |
                          SY_CE_FEATURE_ARGMAX | SY_CE_FEATURE_GRAD_IN_FORWARD |
                          SY_CE_FEATURE_TENSOR_PARALLEL | SY_FEATURE_GRAPH_CAPTURE;
  CHECK(ce.features == wanted);
  CHECK(ce.determinism == SY_DETERMINISTIC);
  CHECK(static_cast<bool>(ce.supports));
  CHECK(static_cast<bool>(ce.workspace_size));
  CHECK(static_cast<bool>(ce.forward));
  CHECK(static_cast<bool>(ce.backward));
  REQUIRE(static_cast<bool>(ce.forward_collectives));
}

TEST_CASE("norms: CUDA only, every kind and flag, sm_margin, deterministic, graph-capturable") {
  const sy_norm& n = te().norm();
  CHECK(n.struct_size == sizeof(sy_norm));
  CHECK(n.devices == SY_DEVICE_BIT(kDLCUDA));
  CHECK(n.dtypes == (SY_DTYPE_F32 | SY_DTYPE_BF16 | SY_DTYPE_F16));
  const uint32_t wanted = SY_NORM_FEATURE_LAYER | SY_NORM_FEATURE_RMS | SY_NORM_FEATURE_L2 |
                          SY_NORM_FEATURE_ZERO_CENTERED_GAMMA | SY_NORM_FEATURE_RESIDUAL |
                          SY_NORM_FEATURE_MEMORY_EFFICIENT |
                          SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT | SY_NORM_FEATURE_SM_MARGIN |
                          SY_FEATURE_GRAPH_CAPTURE;
  CHECK(n.features == wanted);
  CHECK(n.determinism == SY_DETERMINISTIC);
}

TEST_CASE("forward_collectives: one all-gather at tp_size > 1 (argmax rides in it), none at 1") {
  const auto collectives = te().ce().forward_collectives;
  sy_ce_problem p = ce_problem(8, 1000);
  CHECK(collectives(&p) == 0);
  p.flags = SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD;
  CHECK(collectives(&p) == 0);
  p.tp_size = 2;
  p.vocab_local = 500;
  p.flags = 0;
  CHECK(collectives(&p) == 1);
  p.flags = SY_CE_ARGMAX;
  CHECK(collectives(&p) == 1);
  p.tp_size = 8;
  p.vocab_local = 125;
  p.flags = SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD | SY_CE_IGNORE_INDEX;
  p.label_smoothing = 0.1f;
  CHECK(collectives(&p) == 1);
  CHECK(collectives(nullptr) == -1);
  p.struct_size = 8;
  CHECK(collectives(&p) == -1);
}

// ---- probe ----------------------------------------------------------------------------------------

TEST_CASE("probe says whether a GPU is usable here, with the reason when not") {
  std::string message;
  const sy_status status = te().probe(&message);
  if (status == SY_OK) {
    MESSAGE("a usable GPU is present: probe() = SY_OK");
    CHECK(message.empty());
    return;
  }
  CHECK(status == SY_ERR_UNAVAILABLE);
  INFO(message);
  CHECK((contains(message, "te runs on NVIDIA GPUs") || contains(message, "compute capability")));
  CHECK((contains(message, "cuda") || contains(message, "CUDA")));
  // The same answer twice (the static runtime keeps no broken state).
  std::string again;
  CHECK(te().probe(&again) == status);
  CHECK(again == message);
}

// ---- supports: cross entropy -------------------------------------------------------------------

TEST_CASE("ce supports every valid CUDA problem it declares") {
  for (DLDataType dtype : {kBF16, kF16, kF32}) {
    sy_ce_problem p = ce_problem(2048, 131072, dtype);
    CHECK(ce_supports(p).status == SY_OK);
    p.grad_dtype = kF32;
    p.label_dtype = kI32;
    p.label_smoothing = 0.1f;
    p.smoothing = SY_SMOOTHING_PYTORCH;
    p.flags = SY_CE_IGNORE_INDEX | SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD;
    CHECK(ce_supports(p).status == SY_OK);
  }
  // Unequal tensor-parallel partitions, the last rank's slice.
  sy_ce_problem p = ce_problem(6, 50);
  p.tp_size = 3;
  p.vocab_local = 20;
  p.vocab_start = 30;
  CHECK(ce_supports(p).status == SY_OK);
  p = ce_problem(0, 1);  // empty batch, one-word vocabulary
  CHECK(ce_supports(p).status == SY_OK);
}

TEST_CASE("ce refuses what it does not serve, saying why") {
  sy_ce_problem p = ce_problem(4, 50, kBF16, kCpu);
  Result r = ce_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "cpu:0"));
  CHECK(contains(r.message, "CUDA"));
  CHECK(contains(r.message, "native"));

  p = ce_problem(4, 50);
  p.flags = SY_CE_CHECK_LABELS;
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "SY_CE_CHECK_LABELS"));
  CHECK(contains(r.message, "synchronisation"));
  CHECK(contains(r.message, "native"));

  p = ce_problem(4, 50, kF64);
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "logits_dtype = float64"));

  p = ce_problem(4, 50);
  p.grad_dtype = kI32;
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "grad_dtype = int32"));

  p = ce_problem(4, 50);
  p.flags = 1u << 7;
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "0x80"));

  p = ce_problem(int64_t{1} << 31, 50);
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "2^31 - 1 rows"));
}

TEST_CASE("ce refuses meaningless problems as the caller's error") {
  sy_ce_problem p = ce_problem(4, 50);
  p.tp_size = 2;  // vocab_local == vocab_size with tp_size 2: gathered logits
  Result r = ce_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "Megatron-LM#7452"));

  p = ce_problem(4, 50);
  p.label_dtype = kI16;
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "label_dtype = int16"));

  p = ce_problem(4, 50);
  p.label_smoothing = 1.0f;
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "label_smoothing = 1"));

  p = ce_problem(4, 50);
  p.smoothing = 7;
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "problem.smoothing = 7"));

  p = ce_problem(4, 50);
  p.tp_size = 2;
  p.vocab_local = 30;
  p.vocab_start = 30;  // 30 + 30 > 50
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "exceeds vocab_size = 50"));

  p = ce_problem(4, 50);
  p.vocab_local = 40;  // tp_size 1 but not the whole vocabulary
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "tp_size = 1"));

  p = ce_problem(-1, 50);
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "rows = -1"));

  sy_error err = make_error();
  CHECK(te().ce().supports(nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "problem is NULL"));
  p = ce_problem(4, 50);
  p.struct_size = 16;
  r = ce_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "struct_size = 16"));
}

TEST_CASE("ce workspace: a row counter for grad in forward at tp_size 1, the gathered row "
          "statistics at tp_size > 1") {
  CHECK(ce_workspace(ce_problem(2048, 131072)) == 0);
  sy_ce_problem p = ce_problem(1000, 131072);
  p.flags = SY_CE_ARGMAX;
  CHECK(ce_workspace(p) == 0);
  // The persistent grad in forward claims rows through an 8-byte counter.
  p.flags = SY_CE_GRAD_IN_FORWARD | SY_CE_ARGMAX;
  CHECK(ce_workspace(p) == 256);
  p.rows = 0;
  CHECK(ce_workspace(p) == 0);
  p.rows = 1000;
  p.tp_size = 2;
  p.vocab_local = 65536;
  // 24 bytes (max, sum of exp, target logit, sum of logits, argmax) per row and rank.
  CHECK(ce_workspace(p) == round_up(2 * 1000 * 24, 256));
  p.tp_size = 3;
  p.rows = 7;
  p.vocab_local = 20;
  CHECK(ce_workspace(p) == round_up(3 * 7 * 24, 256));
  sy_error err = make_error();
  CHECK(te().ce().workspace_size(&p, nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "bytes"));
}

// ---- supports: norms ------------------------------------------------------------------------------

TEST_CASE("norm supports every kind, flag and hidden size up to 16384") {
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2}) {
    for (int64_t hidden : {int64_t{1}, int64_t{127}, int64_t{1024}, int64_t{4096}, int64_t{5000},
                           int64_t{8192}, int64_t{16384}}) {
      for (DLDataType dtype : {kBF16, kF16, kF32}) {
        sy_norm_problem p = norm_problem(kind, 16384, hidden, dtype);
        INFO("kind " << kind << " hidden " << hidden << " bits " << int(dtype.bits));
        CHECK(norm_supports(p).status == SY_OK);
        p.flags = SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_RESIDUAL | SY_NORM_MEMORY_EFFICIENT |
                  SY_NORM_ACCUMULATE_GRAD_WEIGHT;
        p.grad_weight_dtype = kF32;
        p.y_dtype = kF32;
        p.weight_dtype = kF32;
        CHECK(norm_supports(p).status == SY_OK);
      }
    }
  }
}

TEST_CASE("norm refusals name the field and the limit") {
  sy_norm_problem p = norm_problem(SY_NORM_RMS, 16, 16385);
  Result r = norm_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "hidden = 16385"));
  CHECK(contains(r.message, "16384"));

  p = norm_problem(SY_NORM_LAYER, 16, 4096, kBF16, kCpu);
  r = norm_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "CUDA"));

  p = norm_problem(SY_NORM_LAYER, 16, 4096);
  p.sm_margin = -1;
  r = norm_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "sm_margin = -1"));

  p = norm_problem(SY_NORM_LAYER, 16, 4096);
  p.eps = 0.0f;
  r = norm_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "eps = 0"));

  p = norm_problem(SY_NORM_RMS, 16, 4096);
  p.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;  // grad weight bf16
  r = norm_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "SY_NORM_ACCUMULATE_GRAD_WEIGHT"));

  p = norm_problem(static_cast<sy_norm_kind>(7), 16, 4096);
  r = norm_supports(p);
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "kind = 7"));

  p = norm_problem(SY_NORM_LAYER, 16, 4096, kF64);
  r = norm_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "x_dtype = float64"));

  p = norm_problem(SY_NORM_LAYER, 16, 4096);
  p.flags = 1u << 9;
  r = norm_supports(p);
  CHECK(r.status == SY_ERR_UNSUPPORTED);
  CHECK(contains(r.message, "0x200"));
}

TEST_CASE("sm_margin is accepted when the device cannot be asked, refused when it leaves no SM") {
  sy_norm_problem p = norm_problem(SY_NORM_RMS, 16384, 4096);
  p.sm_margin = 8;
  CHECK(norm_supports(p).status == SY_OK);
  p.sm_margin = 100000;
  const Result r = norm_supports(p);
  if (te().gpu_usable()) {
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "multiprocessors"));
  } else {
    CHECK(r.status == SY_OK);  // no device to compare with; forward and backward check it
  }
}

TEST_CASE("norm workspace: fp32 partials of dgamma (and dbeta) per fixed chunk of rows, and the "
          "RMS/L2 forward's row counter") {
  // README: at most 512 × 128 / (backward threads) chunks of ceil(rows / that) rows.
  // bf16 [16384, 4096] (128 threads): 512 chunks of 32 rows; LayerNorm has two partial arrays,
  // RMS one, L2 none; RMS and L2 add 256 bytes for the forward's row counter.
  const int64_t partial = round_up(512 * 4096 * 4, 256);
  const int64_t counter = 256;
  CHECK(norm_workspace(norm_problem(SY_NORM_LAYER, 16384, 4096)) == 2 * partial);
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 16384, 4096)) == partial + counter);
  CHECK(norm_workspace(norm_problem(SY_NORM_L2, 16384, 4096)) == counter);
  // [16384, 8192] (512 threads): 128 chunks of 128 rows.
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 16384, 8192)) ==
        round_up(128 * 8192 * 4, 256) + counter);
  // Independent of sm_margin (the partition never depends on the grid).
  sy_norm_problem p = norm_problem(SY_NORM_LAYER, 16384, 4096);
  p.sm_margin = 16;
  CHECK(norm_workspace(p) == 2 * partial);
  // Few rows: one chunk per row.
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 5, 127)) > 0);
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 0, 127)) == 0);  // no rows: nothing runs
}

// ---- refusals of forward/backward (descriptor checks, before any GPU work) -------------------

namespace {

struct CeCall {
  sy_ce_problem problem;
  FakeTensor logits, labels, loss, lse, argmax, grad_scale, grad;
  FakeTensor workspace;
  sy_ce_forward_args args{};

  CeCall(int64_t rows, int64_t vocab, DLDataType dtype = kBF16)
      : problem(ce_problem(rows, vocab, dtype)),
        logits(kCuda0, dtype, {rows, vocab}),
        labels(kCuda0, kI64, {rows}),
        loss(kCuda0, kF32, {rows}),
        lse(kCuda0, kF32, {rows}),
        argmax(kCuda0, kI64, {rows}),
        grad_scale(kCuda0, kF32, {rows}),
        grad(kCuda0, dtype, {rows, vocab}),
        workspace(kCuda0, kI64, {1024}) {
    args.struct_size = sizeof args;
    args.problem = &problem;
    args.logits = logits.get();
    args.labels = labels.get();
    args.loss = loss.get();
    args.lse = lse.get();
    args.workspace = workspace.get()->data;
    args.workspace_bytes = 8 * 1024;
  }
  Result forward() {
    sy_error err = make_error();
    return result_of(te().ce().forward(&args, &err), err);
  }
};

}  // namespace

TEST_CASE("ce forward refuses bad arguments, naming them") {
  {
    sy_error err = make_error();
    CHECK(te().ce().forward(nullptr, &err) == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(err.message, "args is NULL"));
  }
  {
    CeCall c(4, 64);
    c.args.struct_size = 8;
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "args.struct_size = 8"));
  }
  {
    CeCall c(4, 64);
    FakeTensor cpu_logits(kCpu, kBF16, {4, 64});
    c.args.logits = cpu_logits.get();
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "logits is on device cpu:0, expected cuda:0"));
  }
  {
    CeCall c(4, 64);
    FakeTensor wrong(kCuda0, kF32, {4, 64});
    c.args.logits = wrong.get();
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "logits has dtype float32, expected bfloat16"));
  }
  {
    CeCall c(4, 64);
    c.problem.flags = SY_CE_ARGMAX;
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "argmax is NULL"));
  }
  {
    CeCall c(4, 64);
    c.problem.flags = SY_CE_GRAD_IN_FORWARD;
    c.args.grad_logits = c.grad.get();
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "grad_scale is NULL"));
  }
  {
    // grad_logits one element into the logits: overlapping, not the same tensor.
    CeCall c(4, 64);
    c.problem.flags = SY_CE_GRAD_IN_FORWARD;
    c.args.grad_scale = c.grad_scale.get();
    FakeTensor overlapping = c.logits.shifted(1);
    c.args.grad_logits = overlapping.get();
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "grad_logits overlaps logits"));
  }
  {
    CeCall c(4, 64);
    FakeTensor misaligned = c.logits.with_byte_offset(1);
    c.args.logits = misaligned.get();
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "not a multiple of its 2-byte elements"));
  }
  {
    CeCall c(4, 64);
    FakeTensor overlapping_rows(kCuda0, kBF16, {4, 64}, 32);  // row stride < row length
    c.args.logits = overlapping_rows.get();
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "row stride 32"));
  }
  {
    CeCall c(4, 64);
    c.problem.tp_size = 2;
    c.problem.vocab_size = 128;
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "tp is NULL"));
  }
  {
    CeCall c(4, 64);
    c.problem.tp_size = 2;
    c.problem.vocab_size = 128;
    sy_comm comm{};
    comm.struct_size = sizeof comm;
    comm.rank = 0;
    comm.size = 2;
    comm.device = kCuda0;
    c.args.tp = &comm;
    Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "tp->all_gather is NULL"));
    c.args.workspace_bytes = 16;  // needs 2 x 4 x 24 rounded to 256
    comm.all_gather = [](void*, const void*, void*, int64_t, DLDataType, void*,
                         sy_error*) -> sy_status { return SY_OK; };
    r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "workspace_bytes = 16 is too small: te needs 256 bytes"));
  }
}

TEST_CASE("ce backward refuses bad arguments, naming them") {
  sy_ce_problem p = ce_problem(4, 64);
  FakeTensor logits(kCuda0, kBF16, {4, 64}), labels(kCuda0, kI64, {4}), lse(kCuda0, kF32, {4});
  FakeTensor grad_loss(kCuda0, kBF16, {4}), grad(kCuda0, kBF16, {4, 64});
  sy_ce_backward_args a{};
  a.struct_size = sizeof a;
  a.problem = &p;
  a.logits = logits.get();
  a.labels = labels.get();
  a.lse = lse.get();
  a.grad_loss = grad_loss.get();
  a.grad_logits = grad.get();
  sy_error err = make_error();
  CHECK(te().ce().backward(&a, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "grad_loss has dtype bfloat16, expected float32"));
  FakeTensor grad_loss32(kCuda0, kF32, {4});
  a.grad_loss = grad_loss32.get();
  a.grad_logits = nullptr;
  err = make_error();
  CHECK(te().ce().backward(&a, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "grad_logits is required but NULL"));
}

TEST_CASE("norm forward and backward refuse bad arguments, naming them") {
  sy_norm_problem p = norm_problem(SY_NORM_RMS, 4, 256);
  FakeTensor x(kCuda0, kBF16, {4, 256}), y(kCuda0, kBF16, {4, 256}), w(kCuda0, kBF16, {256});
  FakeTensor b(kCuda0, kBF16, {256}), rstd(kCuda0, kF32, {4}), mean(kCuda0, kF32, {4});
  sy_norm_forward_args f{};
  f.struct_size = sizeof f;
  f.problem = &p;
  f.x = x.get();
  f.y = y.get();
  f.rstd = rstd.get();
  auto forward = [&] {
    sy_error err = make_error();
    return result_of(te().norm().forward(&f, &err), err);
  };
  Result r = forward();
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "weight is NULL but problem.kind = RMSNorm needs gamma [256]"));
  f.weight = w.get();
  f.bias = b.get();
  r = forward();
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "bias is set but problem.kind = RMSNorm has no beta"));
  f.bias = nullptr;
  f.residual = x.get();
  r = forward();
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "residual is set but problem.flags lacks SY_NORM_RESIDUAL"));
  f.residual = nullptr;
  p.flags = SY_NORM_RESIDUAL;
  FakeTensor res(kCuda0, kBF16, {4, 256});
  f.residual = res.get();
  FakeTensor y_inside = y.shifted(8);  // residual_out overlapping y
  f.residual_out = y_inside.get();
  r = forward();
  CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(r.message, "y overlaps residual_out"));

  sy_norm_problem q = norm_problem(SY_NORM_L2, 4, 256);
  FakeTensor dy(kCuda0, kBF16, {4, 256}), dx(kCuda0, kBF16, {4, 256}), dw(kCuda0, kBF16, {256});
  sy_norm_backward_args g{};
  g.struct_size = sizeof g;
  g.problem = &q;
  g.dy = dy.get();
  g.x_or_y = x.get();
  g.rstd = rstd.get();
  g.dx = dx.get();
  g.dweight = dw.get();
  sy_error err = make_error();
  CHECK(te().norm().backward(&g, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "dweight is set but problem.kind = L2Norm has no gamma"));

  sy_norm_problem layer = norm_problem(SY_NORM_LAYER, 4, 256);
  g.problem = &layer;
  g.dweight = dw.get();
  g.weight = w.get();
  g.mean = mean.get();
  g.workspace = nullptr;
  g.workspace_bytes = 0;
  err = make_error();
  CHECK(te().norm().backward(&g, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "workspace_bytes = 0 is too small: te needs"));
}

// ---- a valid call where CUDA cannot run -----------------------------------------------------

TEST_CASE("a valid call on a machine without a usable GPU is SY_ERR_UNAVAILABLE with the reason") {
  CeCall c(4, 64);
  if (te().gpu_usable()) {
    // With a GPU, host memory labelled cuda:0 is caught before any kernel could fault on it.
    const Result r = c.forward();
    CHECK(r.status == SY_ERR_INVALID_ARGUMENT);
    CHECK(contains(r.message, "logits is labelled cuda:0 but its memory is"));
    return;
  }
  Result r = c.forward();
  CHECK(r.status == SY_ERR_UNAVAILABLE);
  CHECK(contains(r.message, "te: "));
  CHECK(contains(r.message, "cuda"));

  sy_norm_problem p = norm_problem(SY_NORM_RMS, 4, 256);
  FakeTensor x(kCuda0, kBF16, {4, 256}), y(kCuda0, kBF16, {4, 256}), w(kCuda0, kBF16, {256});
  FakeTensor rstd(kCuda0, kF32, {4});
  sy_norm_forward_args f{};
  f.struct_size = sizeof f;
  f.problem = &p;
  f.x = x.get();
  f.y = y.get();
  f.weight = w.get();
  f.rstd = rstd.get();
  sy_error err = make_error();
  CHECK(te().norm().forward(&f, &err) == SY_ERR_UNAVAILABLE);
  CHECK(contains(err.message, "te: "));
}

// ---- the shared object ---------------------------------------------------------------------------

TEST_CASE("the plugin exports only sy_plugin_v1 and needs no CUDA library to load") {
  const std::string& path = te().path;
  std::istringstream symbols(run("nm -D --defined-only '" + path + "' 2>&1"));
  std::set<std::string> exported;
  std::string line;
  while (std::getline(symbols, line)) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (fields >> address >> type >> name) exported.insert(name);
  }
  CHECK(exported == std::set<std::string>{"sy_plugin_v1"});
  const std::string dynamic = run("readelf -d '" + path + "' 2>&1");
  REQUIRE(contains(dynamic, "NEEDED"));
  CHECK_FALSE(contains(dynamic, "libcudart"));
  CHECK_FALSE(contains(dynamic, "libcuda.so"));
}
