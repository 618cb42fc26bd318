// The generated cross-entropy kernels and ce_run's sequence, run on the CPU emulator against
// the float64 reference (docs/semantics.md), with every flag, dtype and layout.
#include "emulator.hpp"
#include "kernel_checks.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

using namespace switchyard::fused::test;
using switchyard::fused::test::Emulator;

namespace {

void expect_match(const CeCase& c) {
  INFO(c.describe());
  const CeRun run = run_ce(c);
  const std::string failures = check_ce(c, run);
  CHECK_MESSAGE(failures.empty(), failures);
}

CeCase tp(CeCase c, std::vector<int64_t> split) {
  c.split = std::move(split);
  return c;
}

}  // namespace

TEST_CASE("cross entropy, one rank: every logits and grad dtype, both label widths") {
  for (DLDataType logits : {sy::kF32, sy::kBF16, sy::kF16}) {
    CeCase c;
    c.logits = c.grad = logits;
    expect_match(c);
    c.labels = sy::kI32;
    c.grad = sy::kF32;  // fp32 gradients of 16-bit logits (TransformerEngine#3193)
    expect_match(c);
  }
  CeCase c;
  c.logits = sy::kF32;
  c.grad = sy::kBF16;
  expect_match(c);
  c.logits = sy::kBF16;
  c.grad = sy::kF16;
  expect_match(c);
}

TEST_CASE("cross entropy: strided and misaligned rows take the scalar path with the same math") {
  for (DLDataType logits : {sy::kF32, sy::kBF16}) {
    CeCase c;
    c.logits = c.grad = logits;
    c.strided = true;
    expect_match(c);
    c.misaligned = true;
    expect_match(c);
    c.strided = false;
    expect_match(c);
  }
}

TEST_CASE("cross entropy: label smoothing, both conventions, over the global vocabulary") {
  for (auto smoothing : {SY_SMOOTHING_MEGATRON, SY_SMOOTHING_PYTORCH}) {
    CeCase c;
    c.alpha = 0.1f;
    c.smoothing = smoothing;
    expect_match(c);
    expect_match(tp(c, {20, 30}));
    c.logits = c.grad = sy::kBF16;
    expect_match(tp(c, {17, 33}));
  }
}

TEST_CASE("cross entropy: ignore_index (also a real vocabulary id) and labels no rank owns") {
  CeCase c;
  c.flags = SY_CE_IGNORE_INDEX;
  expect_match(c);
  c.ignore_index = 7;
  expect_match(c);
  expect_match(tp(c, {16, 16, 18}));
  CeCase unowned;
  unowned.unowned_labels = true;  // Megatron's rule: z_t := max, no one-hot
  unowned.alpha = 0.2f;
  expect_match(unowned);
  expect_match(tp(unowned, {25, 25}));
}

TEST_CASE("cross entropy: argmax is the lowest global id of the max, across ranks") {
  CeCase c;
  c.flags = SY_CE_ARGMAX;
  expect_match(c);
  c.ties = true;
  expect_match(c);
  const CeCase split = tp(c, {16, 16, 18});
  expect_match(split);
  const CeRun run = run_ce(split);
  for (size_t r = 0; r < 3; ++r) {
    CHECK(run.collectives[r] == 3);  // MAX, SUM, and the int64 MIN of the argmax
    CHECK(run.stated_collectives[r] == 3);
  }
  // With ties on columns 1 or 2, 25 and 49, the lowest wins: column 1 or 2 (rank 0).
  for (int64_t i = 0; i < 7; ++i) CHECK(run.argmax[i] == 1 + (i % 2));
}

TEST_CASE("cross entropy, tensor parallel: unequal partitions and two collectives per forward") {
  CeCase c;
  c.rows = 6;
  expect_match(tp(c, {20, 30}));
  expect_match(tp(c, {1, 10, 39}));
  expect_match(tp(c, {7, 7, 7, 7, 7, 7, 8}));
  const CeRun run = run_ce(tp(c, {20, 30}));
  for (size_t r = 0; r < 2; ++r) {
    CHECK(run.collectives[r] == 2);
    CHECK(run.stated_collectives[r] == 2);
    CHECK(run.launched[r] == std::vector<std::string>{"sy_ce_max", "sy_ce_sum", "sy_ce_loss"});
    CHECK(run.host_reads[r] == 0);  // no host synchronisation
  }
  // Every rank holds the same loss and lse, bit for bit.
  CHECK(run.loss_by_rank[0] == run.loss_by_rank[1]);
  CHECK(run.lse_by_rank[0] == run.lse_by_rank[1]);
  const CeRun single = run_ce(c);
  CHECK(single.collectives[0] == 0);
  CHECK(single.stated_collectives[0] == 0);
}

TEST_CASE("cross entropy: gradient in the forward, separate or over the logits") {
  CeCase c;
  c.flags = SY_CE_GRAD_IN_FORWARD;
  expect_match(c);
  c.aliased = true;
  expect_match(c);
  c.logits = c.grad = sy::kBF16;
  expect_match(c);
  expect_match(tp(c, {12, 13, 25}));
  CeCase fp32_grad;
  fp32_grad.flags = SY_CE_GRAD_IN_FORWARD;
  fp32_grad.logits = sy::kF16;
  fp32_grad.grad = sy::kF32;
  expect_match(fp32_grad);
  const CeRun run = run_ce(c);
  CHECK(run.launched[0] == std::vector<std::string>{"sy_ce_max", "sy_ce_sum", "sy_ce_loss", "sy_ce_grad"});
}

TEST_CASE("cross entropy: backward in place and separate, any grad dtype") {
  CeCase c;
  c.backward_in_place = true;
  expect_match(c);
  c.logits = c.grad = sy::kBF16;
  c.strided = true;
  expect_match(c);
  expect_match(tp(c, {24, 26}));
  CeCase separate;
  separate.logits = sy::kBF16;
  separate.grad = sy::kF32;
  separate.alpha = 0.05f;
  separate.smoothing = SY_SMOOTHING_PYTORCH;
  expect_match(separate);
}

TEST_CASE("cross entropy: every feature at once, tensor parallel") {
  CeCase c;
  c.logits = c.grad = sy::kBF16;
  c.labels = sy::kI32;
  c.alpha = 0.1f;
  c.flags = SY_CE_IGNORE_INDEX | SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD | SY_CE_CHECK_LABELS;
  c.ignore_index = 3;
  c.strided = true;
  c.ties = true;
  expect_match(tp(c, {10, 15, 25}));
  c.aliased = true;
  expect_match(tp(c, {10, 15, 25}));
}

TEST_CASE("cross entropy: rows wider than one block (several chunks per row)") {
  // 40000 columns: three chunks of at most 16384, combined by the row's last block.
  CeCase c;
  c.rows = 3;
  c.vocab = 40000;
  c.logits = c.grad = sy::kBF16;
  c.flags = SY_CE_ARGMAX;
  c.alpha = 0.1f;
  c.ties = true;
  expect_match(c);
  c.flags |= SY_CE_GRAD_IN_FORWARD;
  expect_match(tp(c, {17000, 23000}));
}

TEST_CASE("cross entropy: SY_CE_CHECK_LABELS refuses a bad label and writes nothing") {
  CeCase c;
  c.flags = SY_CE_CHECK_LABELS;
  c.bad_label_row = 4;
  for (auto split : {std::vector<int64_t>{}, std::vector<int64_t>{20, 30}}) {
    const CeRun run = run_ce(tp(c, split), false);
    for (size_t r = 0; r < run.status.size(); ++r) {
      CHECK(run.status[r] == SY_ERR_INVALID_ARGUMENT);
      CHECK(run.message[r].find("labels[4] = 55 is outside the vocabulary [0, 50)") != std::string::npos);
      CHECK(run.collectives[r] == 0);  // every rank refuses before its first collective
      CHECK(run.launched[r] == std::vector<std::string>{"sy_ce_check_labels"});
      for (double x : run.loss_by_rank[r]) CHECK(std::isnan(x));
      for (double x : run.lse_by_rank[r]) CHECK(std::isnan(x));
    }
  }
  // Good labels: one host read (the verdict) and the normal sequence.
  CeCase good;
  good.flags = SY_CE_CHECK_LABELS | SY_CE_IGNORE_INDEX;
  good.labels = sy::kI32;
  const CeRun run = run_ce(good);
  CHECK(check_ce(good, run).empty());
  CHECK(run.host_reads[0] == 1);
  CHECK(run.launched[0].front() == "sy_ce_check_labels");
}

TEST_CASE("cross entropy is deterministic: replay, thread order and batch invariance") {
  CeCase c;
  c.rows = 9;
  c.vocab = 40000;  // several chunks: the last-block combine must not depend on who is last
  c.logits = c.grad = sy::kBF16;
  c.alpha = 0.1f;
  c.flags = SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD;
  const CeRun first = run_ce(c);
  const CeRun again = run_ce(c);
  CHECK(first.loss == again.loss);
  CHECK(first.lse == again.lse);
  CHECK(first.argmax == again.argmax);
  CHECK(std::memcmp(first.forward_grad.data(), again.forward_grad.data(),
                    first.forward_grad.size() * sizeof(double)) == 0);
  for (ThreadOrder order : {ThreadOrder::Reverse, ThreadOrder::WarpByWarp}) {
    Emulator::instance().set_order(order);
    const CeRun reordered = run_ce(c);
    Emulator::instance().set_order(ThreadOrder::Forward);
    CHECK(reordered.loss == first.loss);
    CHECK(reordered.lse == first.lse);
    CHECK(reordered.argmax == first.argmax);
    CHECK(std::memcmp(reordered.forward_grad.data(), first.forward_grad.data(),
                      first.forward_grad.size() * sizeof(double)) == 0);
  }
  // A single-chunk row with a wide block and two reductions back to back (smoothing).
  CeCase wide = c;
  wide.vocab = 8000;
  const CeRun in_order = run_ce(wide);
  Emulator::instance().set_order(ThreadOrder::WarpByWarp);
  const CeRun warp_by_warp = run_ce(wide);
  Emulator::instance().set_order(ThreadOrder::Forward);
  CHECK(check_ce(wide, warp_by_warp).empty());
  CHECK(warp_by_warp.loss == in_order.loss);

  // A row computed in a batch of one gives the bits it gets in a batch of nine.
  CeCase small = c;
  small.vocab = 50;
  const CeRun batch = run_ce(small);
  for (int64_t row : {0, 4, 8}) {
    // The same rows: run_ce draws each row from its own generator.
    CeCase prefix = small;
    prefix.rows = row + 1;
    const CeRun part = run_ce(prefix);
    CHECK(part.loss[row] == batch.loss[row]);
    CHECK(part.lse[row] == batch.lse[row]);
    CHECK(part.argmax[row] == batch.argmax[row]);
    for (int64_t j = 0; j < small.vocab; ++j)
      CHECK(part.forward_grad[row * small.vocab + j] == batch.forward_grad[row * small.vocab + j]);
  }
}

TEST_CASE("cross entropy: zero rows launch nothing but keep the ranks' collectives in step") {
  CeCase c;
  c.rows = 0;
  c.flags = SY_CE_ARGMAX | SY_CE_CHECK_LABELS;
  const CeRun single = run_ce(c);
  CHECK(single.status[0] == SY_OK);
  CHECK(single.launched[0].empty());
  const CeRun split = run_ce(tp(c, {20, 30}));
  for (size_t r = 0; r < 2; ++r) {
    CHECK_MESSAGE(split.status[r] == SY_OK, split.message[r]);
    CHECK(split.collectives[r] == 3);
    CHECK(split.stated_collectives[r] == 3);
  }
}
