#include "ce_harness.hpp"

#include <doctest/doctest.h>

namespace native_test {

sy_ce_problem make_ce_problem(int64_t rows, int64_t vocab, DLDataType logits_dtype, uint32_t flags) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = rows;
  p.vocab_local = vocab;
  p.vocab_start = 0;
  p.vocab_size = vocab;
  p.logits_dtype = logits_dtype;
  p.label_dtype = sy::kI64;
  p.grad_dtype = logits_dtype;
  p.device = DLDevice{kDLCPU, 0};
  p.tp_size = 1;
  p.label_smoothing = 0;
  p.smoothing = SY_SMOOTHING_MEGATRON;
  p.ignore_index = -100;
  p.flags = flags;
  return p;
}

CeData random_ce_data(int64_t rows, int64_t vocab, DLDataType logits_dtype, uint64_t seed,
                      bool special_rows) {
  CeData d;
  d.rows = rows;
  d.vocab = vocab;
  Random random(seed);
  Tensor rounding(logits_dtype, {1});
  for (int64_t k = 0; k < rows * vocab; ++k) {
    rounding.set(0, random.uniform(-4.0, 4.0));
    d.logits.push_back(rounding.get(0));
  }
  for (int64_t i = 0; i < rows; ++i) {
    d.labels.push_back(random.integer(0, vocab));
    d.grad_scale.push_back(random.uniform(0.5, 2.0));
    d.grad_loss.push_back(random.uniform(0.5, 2.0));
  }
  if (special_rows) {
    if (rows > 1) d.labels[1] = -100;
    if (rows > 2) d.labels[2] = vocab + 3;
    if (rows > 3 && vocab > 7) {
      d.logits[static_cast<size_t>(3 * vocab + 5)] = 6.0;
      d.logits[static_cast<size_t>(3 * vocab + vocab - 2)] = 6.0;
    }
  }
  return d;
}

CeReferenceInput reference_input(const sy_ce_problem& p, const CeData& data,
                                 const std::vector<double>& g) {
  CeReferenceInput in;
  in.rows = data.rows;
  in.vocab = data.vocab;
  in.logits = data.logits;
  in.labels = data.labels;
  in.g = g;
  in.alpha = p.label_smoothing;
  in.smoothing = p.smoothing;
  in.ignore = (p.flags & SY_CE_IGNORE_INDEX) != 0;
  in.ignore_index = p.ignore_index;
  return in;
}

CeSetup::CeSetup(const sy_ce_problem& p, const CeData& data, int64_t logits_row_stride)
    : problem(p),
      logits(p.logits_dtype, {p.rows, p.vocab_local}, logits_row_stride),
      labels(p.label_dtype, {p.rows}),
      loss(sy::kF32, {p.rows}),
      lse(sy::kF32, {p.rows}),
      argmax(sy::kI64, {p.rows}),
      grad_scale(sy::kF32, {p.rows}),
      grad_loss(sy::kF32, {p.rows}),
      grad(p.grad_dtype, {p.rows, p.vocab_local}) {
  logits.poison();  // padding between rows stays NaN: a read of it would show
  for (int64_t i = 0; i < p.rows; ++i) {
    for (int64_t j = 0; j < p.vocab_local; ++j)
      logits.set(i, j, data.logits[static_cast<size_t>(i * data.vocab + p.vocab_start + j)]);
    labels.set(i, static_cast<double>(data.labels[static_cast<size_t>(i)]));
    grad_scale.set(i, data.grad_scale[static_cast<size_t>(i)]);
    grad_loss.set(i, data.grad_loss[static_cast<size_t>(i)]);
  }
  sy_error err = make_error();
  REQUIRE(ce().workspace_size(&problem, &workspace_bytes, &err) == SY_OK);
  workspace.assign(static_cast<size_t>(workspace_bytes / 8 + 1), 0);
  poison_outputs();
}

void CeSetup::poison_outputs() {
  loss.poison();
  lse.poison();
  argmax.poison();
  grad.poison();
}

sy_ce_forward_args CeSetup::forward_args(bool in_place) {
  sy_ce_forward_args a{};
  a.struct_size = sizeof a;
  a.problem = &problem;
  a.logits = logits.dl();
  a.labels = labels.dl();
  a.loss = loss.dl();
  a.lse = lse.dl();
  if (problem.flags & SY_CE_ARGMAX) a.argmax = argmax.dl();
  if (problem.flags & SY_CE_GRAD_IN_FORWARD) {
    a.grad_scale = grad_scale.dl();
    a.grad_logits = in_place ? logits.dl() : grad.dl();
  }
  a.workspace = workspace.data();
  a.workspace_bytes = workspace_bytes;
  a.tp = nullptr;
  return a;
}

sy_ce_backward_args CeSetup::backward_args(bool in_place) {
  sy_ce_backward_args a{};
  a.struct_size = sizeof a;
  a.problem = &problem;
  a.logits = logits.dl();
  a.labels = labels.dl();
  a.lse = lse.dl();
  a.grad_loss = grad_loss.dl();
  a.grad_logits = in_place ? logits.dl() : grad.dl();
  a.workspace = workspace.data();
  a.workspace_bytes = workspace_bytes;
  return a;
}

}  // namespace native_test
