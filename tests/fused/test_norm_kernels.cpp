// The generated LayerNorm / RMSNorm / L2Norm kernels and norm_run's sequence, on the CPU
// emulator against the float64 reference (docs/semantics.md), forward and backward.
#include "emulator.hpp"
#include "kernel_checks.hpp"
#include "norm_validate.hpp"

#include <doctest/doctest.h>

#include <cstring>

using namespace switchyard::fused::test;

namespace {

void expect_match(const NormCase& c) {
  INFO(c.describe());
  const NormRun run = run_norm(c);
  const std::string failures = check_norm(c, run);
  CHECK_MESSAGE(failures.empty(), failures);
}

constexpr sy_norm_kind kKinds[] = {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2};

NormCase of(sy_norm_kind kind, DLDataType dtype = sy::kF32, int64_t hidden = 127) {
  NormCase c;
  c.kind = kind;
  c.hidden = hidden;
  c.x = c.y = c.weight = c.grad_weight = dtype;
  return c;
}

}  // namespace

TEST_CASE("norms: every kind and dtype, H = 127 (a partial vector group per row)") {
  for (sy_norm_kind kind : kKinds)
    for (DLDataType dtype : {sy::kF32, sy::kBF16, sy::kF16}) expect_match(of(kind, dtype));
}

TEST_CASE("norms: H = 1 and H = 4096 (256 threads, two vector groups each)") {
  for (sy_norm_kind kind : kKinds) {
    expect_match(of(kind, sy::kF32, 1));
    NormCase wide = of(kind, sy::kBF16, 4096);
    wide.rows = 3;
    expect_match(wide);
  }
}

TEST_CASE("norms: zero-centred gamma, residual, memory-efficient, accumulated dgamma") {
  for (sy_norm_kind kind : kKinds) {
    NormCase c = of(kind);
    c.flags = SY_NORM_ZERO_CENTERED_GAMMA;
    expect_match(c);
    c.flags = SY_NORM_RESIDUAL;
    expect_match(c);
    c.flags = SY_NORM_MEMORY_EFFICIENT;
    expect_match(c);
    if (kind == SY_NORM_LAYER) {
      c.bias = false;
      expect_match(c);
      c.bias = true;
    }
    c.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
    expect_match(c);
    c.x = c.y = c.weight = sy::kBF16;  // fp32 main grads of bf16 weights (Megatron)
    c.flags = SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_RESIDUAL | SY_NORM_MEMORY_EFFICIENT |
              SY_NORM_ACCUMULATE_GRAD_WEIGHT;
    expect_match(c);
  }
}

TEST_CASE("norms: y in another dtype, fp32 weights of 16-bit x, bf16 dgamma") {
  for (sy_norm_kind kind : kKinds) {
    NormCase c = of(kind, sy::kBF16);
    c.y = sy::kF32;
    expect_match(c);
    c = of(kind, sy::kF32);
    c.y = sy::kBF16;
    expect_match(c);
    c = of(kind, sy::kF16);
    c.weight = c.grad_weight = sy::kF32;
    expect_match(c);
    c = of(kind, sy::kF32);
    c.grad_weight = sy::kBF16;
    expect_match(c);
  }
}

TEST_CASE("norms: strided and misaligned rows; dx written over dy") {
  for (sy_norm_kind kind : kKinds) {
    NormCase c = of(kind, sy::kBF16);
    c.strided = true;
    expect_match(c);
    c.misaligned = true;
    expect_match(c);
    c = of(kind, sy::kF16, 256);
    c.dx_in_place = true;
    c.flags = SY_NORM_RESIDUAL;
    expect_match(c);
  }
}

TEST_CASE("norms: more rows than one backward chunk; dgamma summed over every chunk") {
  // H = 4096: 32 rows per backward block, so 70 rows make three chunks, the last partial.
  NormCase c = of(SY_NORM_LAYER, sy::kBF16, 4096);
  c.rows = 70;
  const auto layout = switchyard::fused::jit::NormLayout::of(
      switchyard::fused::jit::NormSpecialization{switchyard::fused::jit::NormKind::Layer, 4096,
                                                 switchyard::fused::jit::DType::BF16});
  REQUIRE(layout.chunks(c.rows) == 3);
  expect_match(c);
  c.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  c.grad_weight = sy::kF32;
  expect_match(c);
}

TEST_CASE("norms: zero rows write nothing but dgamma = 0 (or leave the accumulator)") {
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS}) {
    NormCase c = of(kind);
    c.rows = 0;
    const NormRun run = run_norm(c);
    REQUIRE_MESSAGE(run.status == SY_OK, run.message);
    for (double g : run.dgamma) CHECK(g == 0.0);
    CHECK(run.launched == std::vector<std::string>{"sy_norm_dweight"});
  }
}

TEST_CASE("norms are deterministic: replay, thread order, and a row's results never depend on the batch") {
  NormCase c = of(SY_NORM_LAYER, sy::kBF16, 2000);  // 128 threads: four warps
  c.rows = 9;
  c.flags = SY_NORM_RESIDUAL | SY_NORM_ZERO_CENTERED_GAMMA;
  const NormRun first = run_norm(c);
  REQUIRE(check_norm(c, first).empty());
  const NormRun again = run_norm(c);
  CHECK(again.y == first.y);
  CHECK(again.dx == first.dx);
  CHECK(again.dgamma == first.dgamma);
  CHECK(again.dbeta == first.dbeta);
  for (ThreadOrder order : {ThreadOrder::Reverse, ThreadOrder::WarpByWarp}) {
    Emulator::instance().set_order(order);
    const NormRun reordered = run_norm(c);
    Emulator::instance().set_order(ThreadOrder::Forward);
    CHECK(reordered.y == first.y);
    CHECK(reordered.mean == first.mean);
    CHECK(reordered.rstd == first.rstd);
    CHECK(reordered.dx == first.dx);
    CHECK(reordered.dgamma == first.dgamma);
    CHECK(reordered.dbeta == first.dbeta);
  }
  // Rows 0..4 of a 5-row batch are the rows 0..4 of the 9-row batch (same generator
  // sequence), and give the same bits.
  NormCase five = c;
  five.rows = 5;
  const NormRun part = run_norm(five);
  for (int64_t i = 0; i < 5 * c.hidden; ++i) {
    if (part.y[i] != first.y[i]) {
      FAIL("y[" << i << "] differs between a batch of 5 and of 9 rows");
      break;
    }
  }
  for (int64_t i = 0; i < 5; ++i) {
    CHECK(part.mean[i] == first.mean[i]);
    CHECK(part.rstd[i] == first.rstd[i]);
  }
}
