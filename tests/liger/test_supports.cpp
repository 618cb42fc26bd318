// supports() and workspace_size(): pure answers for concrete problems, with reasons.
#include "liger_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace liger_test;

namespace {

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

int64_t ce_workspace(const sy_ce_problem& p) {
  sy_error err = make_error();
  int64_t bytes = -1;
  const sy_status status = ce().workspace_size(&p, &bytes, &err);
  CAPTURE(err.message);
  REQUIRE(status == SY_OK);
  return bytes;
}

int64_t norm_workspace(const sy_norm_problem& p) {
  sy_error err = make_error();
  int64_t bytes = -1;
  const sy_status status = norm().workspace_size(&p, &bytes, &err);
  CAPTURE(err.message);
  REQUIRE(status == SY_OK);
  return bytes;
}

sy_ce_problem tp_slice(int64_t rows, int64_t vocab, int tp, int rank) {
  sy_ce_problem p = ce_problem(rows, vocab);
  p.tp_size = tp;
  p.vocab_local = vocab / tp;
  p.vocab_start = rank * p.vocab_local;
  return p;
}

}  // namespace

TEST_CASE("cross entropy: the shapes and flags of a training step are supported") {
  sy_error err = make_error();
  for (DLDataType dtype : {sy::kBF16, sy::kF16, sy::kF32}) {
    sy_ce_problem p = ce_problem(2048, 131072, dtype);
    p.flags = SY_CE_IGNORE_INDEX | SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD | SY_CE_CHECK_LABELS;
    p.label_smoothing = 0.1f;
    for (sy_smoothing convention : {SY_SMOOTHING_MEGATRON, SY_SMOOTHING_PYTORCH}) {
      p.smoothing = convention;
      for (DLDataType grad : {sy::kF32, sy::kBF16, sy::kF16}) {
        p.grad_dtype = grad;
        CHECK(ce().supports(&p, &err) == SY_OK);
      }
    }
    p.label_dtype = sy::kI32;
    CHECK(ce().supports(&p, &err) == SY_OK);
  }
  sy_ce_problem p = tp_slice(1024, 131072, 8, 7);
  p.flags = SY_CE_ARGMAX;
  CHECK(ce().supports(&p, &err) == SY_OK);
  p = ce_problem(0, 7);  // no rows: nothing to do, still valid
  CHECK(ce().supports(&p, &err) == SY_OK);
}

TEST_CASE("cross entropy: refusals name the field, the value and the way out") {
  sy_error err = make_error();
  sy_ce_problem p = ce_problem(8, 100);
  p.device = kCpu;
  check_refusal(ce().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                {"problem.device = cpu:0", "CUDA devices only", "native"});
  p.device = DLDevice{kDLCUDAHost, 0};
  check_refusal(ce().supports(&p, &err), err, SY_ERR_UNSUPPORTED, {"cuda_host:0"});

  p = ce_problem(8, 100, sy::kF64);
  check_refusal(ce().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                {"logits_dtype = float64", "float32, bfloat16, float16"});
  p = ce_problem(8, 100);
  p.grad_dtype = DLDataType{kDLInt, 8, 1};
  check_refusal(ce().supports(&p, &err), err, SY_ERR_UNSUPPORTED, {"grad_dtype = int8"});
  p = ce_problem(8, 100);
  p.label_dtype = sy::kF32;
  check_refusal(ce().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"label_dtype = float32", "int64 or int32"});
  p = ce_problem(8, 100);
  p.label_smoothing = 1.0f;
  check_refusal(ce().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"label_smoothing = 1", "[0, 1)"});
  p.label_smoothing = std::numeric_limits<float>::quiet_NaN();
  check_refusal(ce().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT, {"label_smoothing = nan"});
  p = ce_problem(8, 100);
  p.smoothing = 7;
  check_refusal(ce().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT, {"problem.smoothing = 7"});
  p = ce_problem(8, 100);
  p.flags = SY_CE_ARGMAX | (1u << 4);
  check_refusal(ce().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                {"bits 0x10", "liger does not know"});
  p = ce_problem(8, 100);
  p.tp_size = 2;  // gathered logits
  check_refusal(ce().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"gathered", "Megatron-LM#7452"});
  p = tp_slice(8, 100, 2, 1);
  p.vocab_start = 60;
  check_refusal(ce().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"60 + 50 exceeds vocab_size = 100"});
  p = ce_problem(int64_t{1} << 31, 10);
  check_refusal(ce().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                {"rows = 2147483648", "split the batch"});
  check_refusal(ce().supports(nullptr, &err), err, SY_ERR_INVALID_ARGUMENT, {"problem is NULL"});
  p = ce_problem(8, 100);
  p.struct_size = 16;
  check_refusal(ce().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"problem.struct_size = 16"});
}

TEST_CASE("cross entropy workspace: the label-check slot and the TP row statistics") {
  sy_ce_problem p = ce_problem(100, 1000);
  CHECK(ce_workspace(p) == 0);
  p.flags = SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD | SY_CE_IGNORE_INDEX;
  CHECK(ce_workspace(p) == 0);  // TP1: everything stays in registers and shared memory
  p.flags = SY_CE_CHECK_LABELS;
  CHECK(ce_workspace(p) == 256);
  p = tp_slice(100, 1000, 2, 0);
  // local max, global max, local sums (400 B -> 512 each) and 3 x 400 B packed (-> 1280).
  CHECK(ce_workspace(p) == 3 * 512 + 1280);
  p.flags = SY_CE_ARGMAX;  // + int64 candidates, 800 B -> 1024
  CHECK(ce_workspace(p) == 3 * 512 + 1280 + 1024);
  p.flags = SY_CE_ARGMAX | SY_CE_CHECK_LABELS;
  CHECK(ce_workspace(p) == 256 + 3 * 512 + 1280 + 1024);
  p.rows = 0;
  p.flags = 0;
  CHECK(ce_workspace(p) == 0);
  sy_error err = make_error();
  p = ce_problem(8, 100);
  check_refusal(ce().workspace_size(&p, nullptr, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"bytes (the output pointer) is NULL"});
}

TEST_CASE("norms: every kind, dtype mix and declared flag is supported") {
  sy_error err = make_error();
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2}) {
    for (int64_t hidden : {1, 127, 4096, 8192}) {
      sy_norm_problem p = norm_problem(kind, 16384, hidden);
      p.flags = SY_NORM_RESIDUAL | SY_NORM_MEMORY_EFFICIENT | SY_NORM_ZERO_CENTERED_GAMMA |
                SY_NORM_ACCUMULATE_GRAD_WEIGHT;
      p.grad_weight_dtype = sy::kF32;
      p.y_dtype = sy::kF32;
      CAPTURE(kind);
      CAPTURE(hidden);
      CHECK(norm().supports(&p, &err) == SY_OK);
    }
  }
  // Hidden sizes whose dgamma sums fit the 227 KB of a Hopper block.
  sy_norm_problem p = norm_problem(SY_NORM_RMS, 8, 32768);
  CHECK(norm().supports(&p, &err) == SY_OK);
  p = norm_problem(SY_NORM_LAYER, 8, 16384);
  CHECK(norm().supports(&p, &err) == SY_OK);
  p = norm_problem(SY_NORM_L2, 8, int64_t{1} << 22);  // no gamma, no sums
  CHECK(norm().supports(&p, &err) == SY_OK);
}

TEST_CASE("norms: refusals name the field, the value and the way out") {
  sy_error err = make_error();
  sy_norm_problem p = norm_problem(SY_NORM_RMS, 8, 64);
  p.sm_margin = 2;
  check_refusal(norm().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                {"sm_margin = 2", "does not implement an SM margin", "te"});
  p.sm_margin = -1;
  check_refusal(norm().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT, {"sm_margin = -1"});
  p = norm_problem(SY_NORM_LAYER, 8, 32768);
  check_refusal(norm().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                {"hidden = 32768", "LayerNorm", "dgamma/dbeta", "262144 bytes", "shared memory"});
  p = norm_problem(SY_NORM_RMS, 8, 65536);
  check_refusal(norm().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                {"hidden = 65536", "RMSNorm", "262144 bytes"});
  p = norm_problem(SY_NORM_RMS, 8, 64);
  p.device = kCpu;
  check_refusal(norm().supports(&p, &err), err, SY_ERR_UNSUPPORTED,
                {"problem.device = cpu:0", "CUDA devices only"});
  p = norm_problem(SY_NORM_RMS, 8, 64);
  p.eps = 0.0f;
  check_refusal(norm().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT, {"eps = 0"});
  p = norm_problem(SY_NORM_RMS, 8, 64);
  p.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  check_refusal(norm().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT,
                {"grad_weight_dtype = bfloat16", "float32 buffers"});
  p = norm_problem(SY_NORM_RMS, 8, 64);
  p.flags = 1u << 9;
  check_refusal(norm().supports(&p, &err), err, SY_ERR_UNSUPPORTED, {"bits 0x200"});
  p = norm_problem(SY_NORM_RMS, 8, 64, sy::kF64);
  check_refusal(norm().supports(&p, &err), err, SY_ERR_UNSUPPORTED, {"x_dtype = float64"});
  p = norm_problem(static_cast<sy_norm_kind>(5), 8, 64);
  check_refusal(norm().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT, {"kind = 5"});
  p = norm_problem(SY_NORM_RMS, 8, 0);
  check_refusal(norm().supports(&p, &err), err, SY_ERR_INVALID_ARGUMENT, {"hidden = 0"});
}

TEST_CASE("norm workspace: one float per column per block of 32 rows, for dgamma and dbeta") {
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 100, 64)) == 4 * 64 * 4);  // 4 blocks
  CHECK(norm_workspace(norm_problem(SY_NORM_LAYER, 100, 64)) == 2 * 4 * 64 * 4);
  CHECK(norm_workspace(norm_problem(SY_NORM_L2, 100, 64)) == 0);
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 0, 64)) == 0);
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 33, 3)) == 256);     // 2 x 3 floats, aligned
  CHECK(norm_workspace(norm_problem(SY_NORM_LAYER, 33, 3)) == 512);
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 16384, 4096)) == 512 * 4096 * 4);
}

TEST_CASE("norm workspace: 64-row blocks for 5120 < H <= 8192 and more than 10240 rows") {
  // [16384, 8192] bf16 LayerNorm: 256 partial rows of 64, dgamma and dbeta (each a multiple of
  // 256 bytes already).
  sy_norm_problem p = norm_problem(SY_NORM_LAYER, 16384, 8192, sy::kBF16);
  CHECK(norm_workspace(p) == 2 * 256 * 8192 * 4);
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 16384, 6144)) == 256 * 6144 * 4);
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 10241, 8192)) == 161 * 8192 * 4);  // short last
  // 32 rows: H <= 5120 (3 backward blocks per SM), H > 8192 (shared-memory path), few rows.
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 16384, 5120)) == 512 * 5120 * 4);
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 16384, 8200)) == 512 * 8200 * 4);
  CHECK(norm_workspace(norm_problem(SY_NORM_RMS, 10240, 8192)) == 320 * 8192 * 4);
}
