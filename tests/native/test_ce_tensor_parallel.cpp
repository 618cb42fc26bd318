// Cross entropy over a ThreadGroup: TP=2/3/4 with unequal partitions equals TP=1, the argmax
// tie-break works across ranks, a forward issues exactly the collectives it declares (3, or 4
// with SY_CE_ARGMAX) and a backward none.
#include "ce_harness.hpp"

#include <switchyard/comm.hpp>

#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <memory>
#include <numeric>
#include <thread>

using namespace native_test;

namespace {

// Columns [start, start + count) of a global [rows, vocab] tensor, as a strided DLTensor.
struct ColumnView {
  std::array<int64_t, 2> shape{};
  std::array<int64_t, 2> strides{};
  DLTensor tensor{};
  ColumnView(Tensor& global, int64_t start, int64_t count) {
    tensor = *global.dl();
    shape = {global.rows(), count};
    strides = {global.cols(), 1};
    tensor.shape = shape.data();
    tensor.strides = strides.data();
    tensor.byte_offset = static_cast<uint64_t>(start * global.dtype().bits / 8);
  }
};

struct RankResult {
  sy_status forward = SY_ERR_INTERNAL, backward = SY_ERR_INTERNAL;
  std::string message;
  Tensor loss, lse, argmax;
};

struct TpRun {
  std::vector<RankResult> ranks;
  Tensor grad_forward;   // [rows, vocab], each rank wrote its columns
  Tensor grad_backward;  // [rows, vocab]
  std::vector<int64_t> forward_collectives, forward_all_reduces, backward_collectives;
  std::vector<int32_t> declared;
};

TpRun run_tp(const sy_ce_problem& base, const CeData& data, const std::vector<int64_t>& partition) {
  const int32_t tp = static_cast<int32_t>(partition.size());
  switchyard::ThreadGroup group(tp, 20000);
  Tensor logits(base.logits_dtype, {data.rows, data.vocab});
  logits.fill(data.logits);
  Tensor labels(base.label_dtype, {data.rows});
  Tensor grad_scale(sy::kF32, {data.rows});
  Tensor grad_loss(sy::kF32, {data.rows});
  for (int64_t i = 0; i < data.rows; ++i) {
    labels.set(i, static_cast<double>(data.labels[static_cast<size_t>(i)]));
    grad_scale.set(i, data.grad_scale[static_cast<size_t>(i)]);
    grad_loss.set(i, data.grad_loss[static_cast<size_t>(i)]);
  }
  TpRun run;
  run.grad_forward = Tensor(base.grad_dtype, {data.rows, data.vocab});
  run.grad_backward = Tensor(base.grad_dtype, {data.rows, data.vocab});
  run.grad_forward.poison();
  run.grad_backward.poison();
  run.ranks.resize(static_cast<size_t>(tp));
  std::vector<sy_ce_problem> problems(static_cast<size_t>(tp), base);
  std::vector<int64_t> starts(static_cast<size_t>(tp), 0);
  for (int32_t r = 1; r < tp; ++r) starts[static_cast<size_t>(r)] = starts[static_cast<size_t>(r - 1)] + partition[static_cast<size_t>(r - 1)];
  for (int32_t r = 0; r < tp; ++r) {
    sy_ce_problem& p = problems[static_cast<size_t>(r)];
    p.tp_size = tp;
    p.vocab_start = starts[static_cast<size_t>(r)];
    p.vocab_local = partition[static_cast<size_t>(r)];
    RankResult& out = run.ranks[static_cast<size_t>(r)];
    out.loss = Tensor(sy::kF32, {data.rows});
    out.lse = Tensor(sy::kF32, {data.rows});
    out.argmax = Tensor(sy::kI64, {data.rows});
    out.loss.poison();
    out.lse.poison();
    out.argmax.poison();
    run.declared.push_back(ce().forward_collectives(&p));
  }

  // Every descriptor is made here, before the rank threads start: they only read them.
  const DLTensor* labels_dl = labels.dl();
  const DLTensor* grad_scale_dl = grad_scale.dl();
  const DLTensor* grad_loss_dl = grad_loss.dl();
  std::vector<std::unique_ptr<ColumnView>> logits_views, grad_views, grad_backward_views;
  std::vector<DLTensor*> loss_dl, lse_dl, argmax_dl;
  for (int32_t r = 0; r < tp; ++r) {
    const sy_ce_problem& p = problems[static_cast<size_t>(r)];
    RankResult& out = run.ranks[static_cast<size_t>(r)];
    logits_views.push_back(std::make_unique<ColumnView>(logits, p.vocab_start, p.vocab_local));
    grad_views.push_back(std::make_unique<ColumnView>(run.grad_forward, p.vocab_start, p.vocab_local));
    grad_backward_views.push_back(
        std::make_unique<ColumnView>(run.grad_backward, p.vocab_start, p.vocab_local));
    loss_dl.push_back(out.loss.dl());
    lse_dl.push_back(out.lse.dl());
    argmax_dl.push_back(out.argmax.dl());
  }

  auto rank_main = [&](int32_t r) {
    const size_t k = static_cast<size_t>(r);
    const sy_ce_problem& p = problems[k];
    RankResult& out = run.ranks[k];
    int64_t bytes = 0;
    sy_error err = make_error();
    if (ce().workspace_size(&p, &bytes, &err) != SY_OK) {
      out.message = err.message;
      return;
    }
    std::vector<uint64_t> workspace(static_cast<size_t>(bytes / 8 + 1));
    sy_ce_forward_args f{};
    f.struct_size = sizeof f;
    f.problem = &p;
    f.logits = &logits_views[k]->tensor;
    f.labels = labels_dl;
    f.loss = loss_dl[k];
    f.lse = lse_dl[k];
    f.argmax = (p.flags & SY_CE_ARGMAX) ? argmax_dl[k] : nullptr;
    f.grad_scale = grad_scale_dl;
    f.grad_logits = (p.flags & SY_CE_GRAD_IN_FORWARD) ? &grad_views[k]->tensor : nullptr;
    f.workspace = workspace.data();
    f.workspace_bytes = bytes;
    f.tp = group.comm(r);
    out.forward = ce().forward(&f, &err);
    if (out.forward != SY_OK) out.message = err.message;
  };
  auto backward_main = [&](int32_t r) {
    const size_t k = static_cast<size_t>(r);
    const sy_ce_problem& p = problems[k];
    RankResult& out = run.ranks[k];
    sy_ce_backward_args b{};
    b.struct_size = sizeof b;
    b.problem = &p;
    b.logits = &logits_views[k]->tensor;
    b.labels = labels_dl;
    b.lse = lse_dl[k];
    b.grad_loss = grad_loss_dl;
    b.grad_logits = &grad_backward_views[k]->tensor;
    sy_error err = make_error();
    out.backward = ce().backward(&b, &err);
    if (out.backward != SY_OK) out.message = err.message;
  };

  auto on_every_rank = [&](const std::function<void(int32_t)>& body) {
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < tp; ++r) threads.emplace_back(body, r);
    for (std::thread& t : threads) t.join();
  };
  on_every_rank(rank_main);
  for (int32_t r = 0; r < tp; ++r) {
    run.forward_collectives.push_back(group.collectives(r));
    run.forward_all_reduces.push_back(group.all_reduces(r));
  }
  group.reset_counts();
  on_every_rank(backward_main);
  for (int32_t r = 0; r < tp; ++r) run.backward_collectives.push_back(group.collectives(r));
  return run;
}

}  // namespace

TEST_CASE("TP=2/3/4 with unequal partitions equals TP=1, with the declared collectives") {
  load_native();
  const int64_t rows = 12, vocab = 37;
  const std::vector<std::vector<int64_t>> partitions = {{15, 22}, {10, 15, 12}, {5, 12, 9, 11}};
  for (DLDataType dtype : {sy::kF32, sy::kBF16})
    for (float alpha : {0.0f, 0.1f})
      for (sy_smoothing convention : {SY_SMOOTHING_MEGATRON, SY_SMOOTHING_PYTORCH})
        for (uint32_t argmax : {0u, unsigned{SY_CE_ARGMAX}}) {
          sy_ce_problem p = make_ce_problem(rows, vocab, dtype,
                                            SY_CE_IGNORE_INDEX | SY_CE_GRAD_IN_FORWARD | argmax);
          p.grad_dtype = sy::kF32;
          p.label_smoothing = alpha;
          p.smoothing = convention;
          const CeData data = random_ce_data(rows, vocab, dtype, 21);

          CeSetup single(p, data);
          sy_error err = make_error();
          sy_ce_forward_args f = single.forward_args();
          REQUIRE_MESSAGE(ce().forward(&f, &err) == SY_OK, err.message);
          const CeReference fwd_ref = ce_reference(reference_input(p, data, data.grad_scale));
          const CeReference bwd_ref = ce_reference(reference_input(p, data, data.grad_loss));

          for (const std::vector<int64_t>& partition : partitions) {
            CAPTURE(sy::dtype_name(dtype));
            CAPTURE(alpha);
            CAPTURE(convention);
            CAPTURE(argmax);
            CAPTURE(partition.size());
            const TpRun run = run_tp(p, data, partition);
            for (size_t r = 0; r < partition.size(); ++r) {
              const RankResult& rank = run.ranks[r];
              INFO("rank " << r << ": " << rank.message);
              REQUIRE(rank.forward == SY_OK);
              REQUIRE(rank.backward == SY_OK);
              const int32_t expected = 3 + (argmax ? 1 : 0);
              CHECK(run.declared[r] == expected);
              CHECK(run.forward_collectives[r] == expected);
              CHECK(run.forward_all_reduces[r] == expected);
              CHECK(run.backward_collectives[r] == 0);
              // Every rank holds the same statistics, bit for bit.
              CHECK(rank.loss.same_bits(run.ranks[0].loss));
              CHECK(rank.lse.same_bits(run.ranks[0].lse));
              check_close(rank.loss.values(), single.loss.values(), 2e-6, 1e-6, "loss vs TP=1");
              check_close(rank.lse.values(), single.lse.values(), 1e-6, 0, "lse vs TP=1");
              if (argmax) {
                CHECK(rank.argmax.same_bits(single.argmax));
                CHECK(rank.argmax.get(3) == 5);  // tie across ranks: lowest global id
              }
            }
            check_close(run.grad_forward.values(), fwd_ref.grad, 1e-5, 1e-6 * max_abs(fwd_ref.grad),
                        "TP grad in forward");
            check_close(run.grad_forward.values(), single.grad.values(), 1e-5,
                        1e-6 * max_abs(fwd_ref.grad), "TP grad in forward vs TP=1");
            check_close(run.grad_backward.values(), bwd_ref.grad, 1e-5, 1e-6 * max_abs(bwd_ref.grad),
                        "TP backward");
          }
        }
}

TEST_CASE("forward_collectives: 0 without tensor parallelism") {
  load_native();
  sy_ce_problem p = make_ce_problem(4, 10, sy::kF32, SY_CE_ARGMAX);
  CHECK(ce().forward_collectives(&p) == 0);
  p.tp_size = 2;
  p.vocab_local = 5;
  CHECK(ce().forward_collectives(&p) == 4);
  p.flags = 0;
  CHECK(ce().forward_collectives(&p) == 3);
  CHECK(ce().forward_collectives(nullptr) == -1);
}
