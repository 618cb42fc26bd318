#include "ce_bench.hpp"

#include "bench_error.hpp"
#include "check.hpp"
#include "counting_comm.hpp"
#include "dtype.hpp"
#include "host_random.hpp"
#include "tensor_ref.hpp"
#include "timing_loop.hpp"

#include <switchyard/loss.h>

#include <algorithm>
#include <memory>
#include <optional>

namespace switchyard::bench {
namespace {

// Logits of a trained LM head span a few units; uniform in [-6, 6] keeps the softmax far from
// one-hot and every exp far from under- or overflow.
constexpr float kLogitLow = -6.0f;
constexpr float kLogitHigh = 6.0f;

// Everything one rank holds for one backend on one case. Not movable: the argument tables
// point at the tensors.
struct CeRank {
  Device* device = nullptr;
  sy_ce_problem problem{};
  std::optional<CrossEntropy> op;
  std::unique_ptr<CountingComm> comm;
  DeviceBuffer logits, pristine, grad_out, labels, loss, lse, grad, workspace;
  std::unique_ptr<TensorRef> t_logits, t_grad_out, t_labels, t_loss, t_lse, t_grad;
  sy_ce_forward_args forward{};
  sy_ce_backward_args backward{};
  int64_t workspace_bytes = 0;
};

sy_ce_problem make_problem(const CaseSpec& spec, const CeCaseData& data, int rank,
                           int32_t tp_size, DLDevice device) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = data.rows;
  p.vocab_local = data.vocab_local;
  p.vocab_start = rank * data.vocab_local;
  p.vocab_size = data.vocab_local * tp_size;
  p.logits_dtype = data.dtype;
  p.label_dtype = kI64;
  p.grad_dtype = data.dtype;
  p.device = device;
  p.tp_size = tp_size;
  p.label_smoothing = 0.0f;
  p.smoothing = SY_SMOOTHING_MEGATRON;
  p.ignore_index = -100;
  p.flags = spec.path == CePath::GradInForward ? SY_CE_GRAD_IN_FORWARD : 0u;
  return p;
}

Status status_of(const Error& e) {
  return e.status() == SY_ERR_UNSUPPORTED ? Status::Unsupported : Status::Error;
}

std::string error_text(const Error& e) {
  return std::string(status_name(e.status())) + ": " + e.what();
}

// The gradient overwrites the logits in both paths when in place: backward writes over the
// logits it reads, grad-in-forward writes over the logits of its own forward.
void allocate_rank(CeRank& s, const CeCaseData& data, int rank, const CaseSpec& spec,
                   bool in_place) {
  Device& device = *s.device;
  const DLDevice where = device.dl_device();
  const int64_t logits_bytes = data.rows * data.vocab_local * dtype_bytes(data.dtype);

  s.logits = device.allocate(logits_bytes);
  device.upload(s.logits.data(), data.rank_logits[static_cast<size_t>(rank)].data(), logits_bytes);
  if (in_place) {
    s.pristine = device.allocate(logits_bytes);
    device.copy_async(s.pristine.data(), s.logits.data(), logits_bytes);
  } else {
    s.grad_out = device.allocate(logits_bytes);
  }
  s.labels = device.allocate(data.rows * 8);
  device.upload(s.labels.data(), data.labels.data(), data.rows * 8);
  s.loss = device.allocate(data.rows * 4);
  s.lse = device.allocate(data.rows * 4);
  s.grad = device.allocate(data.rows * 4);
  device.upload(s.grad.data(), data.grad.data(), data.rows * 4);
  s.workspace_bytes = s.op->workspace_size();
  if (s.workspace_bytes > 0) s.workspace = device.allocate(s.workspace_bytes);
  device.synchronize("uploading the inputs");

  s.t_logits = std::make_unique<TensorRef>(s.logits.data(), where, data.dtype,
                                           std::initializer_list<int64_t>{data.rows, data.vocab_local});
  s.t_grad_out = std::make_unique<TensorRef>(in_place ? s.logits.data() : s.grad_out.data(), where,
                                             data.dtype,
                                             std::initializer_list<int64_t>{data.rows, data.vocab_local});
  s.t_labels = std::make_unique<TensorRef>(s.labels.data(), where, kI64, std::initializer_list<int64_t>{data.rows});
  s.t_loss = std::make_unique<TensorRef>(s.loss.data(), where, kF32, std::initializer_list<int64_t>{data.rows});
  s.t_lse = std::make_unique<TensorRef>(s.lse.data(), where, kF32, std::initializer_list<int64_t>{data.rows});
  s.t_grad = std::make_unique<TensorRef>(s.grad.data(), where, kF32, std::initializer_list<int64_t>{data.rows});

  const bool in_forward = spec.path == CePath::GradInForward;
  s.forward.struct_size = sizeof s.forward;
  s.forward.problem = &s.problem;
  s.forward.logits = s.t_logits->get();
  s.forward.labels = s.t_labels->get();
  s.forward.loss = s.t_loss->get();
  s.forward.lse = s.t_lse->get();
  s.forward.argmax = nullptr;
  s.forward.grad_scale = in_forward ? s.t_grad->get() : nullptr;
  s.forward.grad_logits = in_forward ? s.t_grad_out->get() : nullptr;
  s.forward.workspace = s.workspace.data();
  s.forward.workspace_bytes = s.workspace_bytes;
  s.forward.tp = s.comm ? s.comm->get() : nullptr;
  s.forward.stream = device.stream();

  s.backward.struct_size = sizeof s.backward;
  s.backward.problem = &s.problem;
  s.backward.logits = s.t_logits->get();
  s.backward.labels = s.t_labels->get();
  s.backward.lse = s.t_lse->get();
  s.backward.grad_loss = s.t_grad->get();
  s.backward.grad_logits = s.t_grad_out->get();
  s.backward.workspace = s.workspace.data();
  s.backward.workspace_bytes = s.workspace_bytes;
  s.backward.stream = device.stream();
}

// What the correctness run read back from one rank, decoded.
struct CeReadBack {
  std::vector<double> loss, lse;  // [samples]
  std::vector<double> grad;       // [samples, vocab_local]
};

CeReadBack read_back(CeRank& s, const CeCaseData& data) {
  Device& device = *s.device;
  CeReadBack out;
  std::vector<float> loss(static_cast<size_t>(data.rows)), lse(static_cast<size_t>(data.rows));
  device.download(loss.data(), s.loss.data(), data.rows * 4);
  device.download(lse.data(), s.lse.data(), data.rows * 4);
  const int64_t width = dtype_bytes(data.dtype);
  const int64_t row_bytes = data.vocab_local * width;
  std::vector<uint8_t> row(static_cast<size_t>(row_bytes));
  const auto* grad_base = static_cast<const uint8_t*>(s.t_grad_out->get()->data);
  for (int64_t i : data.sample_rows) {
    out.loss.push_back(loss[static_cast<size_t>(i)]);
    out.lse.push_back(lse[static_cast<size_t>(i)]);
    device.download(row.data(), grad_base + i * row_bytes, row_bytes);
    for (int64_t j = 0; j < data.vocab_local; ++j)
      out.grad.push_back(decode_element(data.dtype, row.data() + j * width));
  }
  return out;
}

CheckReport compare(const CeCaseData& data, const std::vector<CeReadBack>& ranks) {
  CheckReport report;
  report.ran = true;
  report.rows = static_cast<int64_t>(data.sample_rows.size());
  std::vector<double> got_loss, got_lse, got_grad, want_loss, want_lse, want_grad;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const auto& rb = ranks[r];
    got_loss.insert(got_loss.end(), rb.loss.begin(), rb.loss.end());
    got_lse.insert(got_lse.end(), rb.lse.begin(), rb.lse.end());
    got_grad.insert(got_grad.end(), rb.grad.begin(), rb.grad.end());
    want_loss.insert(want_loss.end(), data.reference.loss.begin(), data.reference.loss.end());
    want_lse.insert(want_lse.end(), data.reference.lse.begin(), data.reference.lse.end());
    for (size_t k = 0; k < data.sample_rows.size(); ++k) {
      const double* row = data.reference.grad.data() + static_cast<int64_t>(k) * data.vocab +
                          static_cast<int64_t>(r) * data.vocab_local;
      want_grad.insert(want_grad.end(), row, row + data.vocab_local);
    }
  }
  report.outputs.push_back(check_output(
      "loss", got_loss, want_loss, conformance::statistic_tolerance(data.dtype, max_abs(want_loss))));
  report.outputs.push_back(check_output(
      "lse", got_lse, want_lse, conformance::statistic_tolerance(data.dtype, max_abs(want_lse))));
  report.outputs.push_back(check_output(
      "grad", got_grad, want_grad,
      conformance::elementwise_tolerance(data.dtype, max_abs(want_grad)), data.vocab_local));
  return report;
}

int32_t declared_at_tp2(const Runtime& runtime, const CaseSpec& spec, const CeCaseData& data,
                        DLDevice device) {
  CeCaseData split_shape;  // only the shape matters for the problem
  split_shape.rows = data.rows;
  split_shape.vocab_local = data.vocab_local;
  split_shape.dtype = data.dtype;
  try {
    return runtime.cross_entropy(make_problem(spec, split_shape, 0, 2, device))
        .backend()
        .forward_collectives;
  } catch (const Error&) {
    return -1;  // the backend does not do TP2 of this shape: nothing declared
  }
}

}  // namespace

bool CeCaseData::same_shape(const CaseSpec& spec, int32_t ranks_, DLDataType dtype_) const {
  return rows == spec.rows && vocab_local == spec.cols && ranks == ranks_ &&
         dtype.code == dtype_.code && dtype.bits == dtype_.bits;
}

CeCaseData make_ce_data(const CaseSpec& spec, DLDataType dtype, int32_t ranks,
                        const RunSettings& settings) {
  CeCaseData d;
  d.rows = spec.rows;
  d.vocab_local = spec.cols;
  d.vocab = spec.cols * ranks;
  d.ranks = ranks;
  d.dtype = dtype;
  const uint64_t seed = settings.seed * 1000003u + static_cast<uint64_t>(d.rows * 31 + d.vocab);
  const int64_t width = dtype_bytes(dtype);

  std::vector<uint8_t> global = random_elements(d.rows * d.vocab, dtype, kLogitLow, kLogitHigh, seed);
  if (ranks == 1) {
    d.rank_logits.push_back(std::move(global));
  } else {
    for (int32_t r = 0; r < ranks; ++r) {
      std::vector<uint8_t> part(static_cast<size_t>(d.rows * d.vocab_local * width));
      for (int64_t i = 0; i < d.rows; ++i)
        std::copy_n(global.data() + (i * d.vocab + r * d.vocab_local) * width, d.vocab_local * width,
                    part.data() + i * d.vocab_local * width);
      d.rank_logits.push_back(std::move(part));
    }
  }
  d.labels = random_labels(d.rows, d.vocab, seed + 1);
  // Megatron's upstream gradient is loss_mask / num_tokens: positive and about 1/rows.
  d.grad = random_floats(d.rows, 0.5f / static_cast<float>(d.rows), 1.5f / static_cast<float>(d.rows),
                         seed + 2);
  d.sample_rows = sample_indices(settings.check_rows, d.rows, seed + 3);

  const int64_t samples = static_cast<int64_t>(d.sample_rows.size());
  std::vector<double> logits(static_cast<size_t>(samples * d.vocab));
  std::vector<int64_t> labels;
  std::vector<double> grad;
  for (int64_t k = 0; k < samples; ++k) {
    const int64_t i = d.sample_rows[static_cast<size_t>(k)];
    for (int64_t j = 0; j < d.vocab; ++j) {
      const int64_t r = j / d.vocab_local, c = j % d.vocab_local;
      const uint8_t* element = d.rank_logits[static_cast<size_t>(r)].data() + (i * d.vocab_local + c) * width;
      logits[static_cast<size_t>(k * d.vocab + j)] = decode_element(dtype, element);
    }
    labels.push_back(d.labels[static_cast<size_t>(i)]);
    grad.push_back(d.grad[static_cast<size_t>(i)]);
  }
  conformance::CeReferenceProblem problem;
  problem.rows = samples;
  problem.vocab = d.vocab;
  d.reference = conformance::reference_ce_forward(problem, logits, labels, &grad);
  return d;
}

Result run_ce_backend(const CaseSpec& spec, const CeCaseData& data, const std::string& backend,
                      const RunContext& context) {
  Result result;
  result.case_name = spec.name;
  result.backend = backend;
  const int ranks = context.setup.ranks();
  const bool per_token = spec.path == CePath::PerToken;
  const bool in_place = context.settings.grad_in_place;

  RuntimeOptions options = context.settings.runtime_base;
  options.cross_entropy = backend;
  std::optional<Runtime> runtime;
  std::vector<std::unique_ptr<CeRank>> state;
  try {
    runtime.emplace(options);
    for (int r = 0; r < ranks; ++r) {
      auto s = std::make_unique<CeRank>();
      s->device = context.setup.devices[static_cast<size_t>(r)];
      s->problem = make_problem(spec, data, r, ranks, s->device->dl_device());
      s->op.emplace(runtime->cross_entropy(s->problem));
      if (!context.setup.comms.empty())
        s->comm = std::make_unique<CountingComm>(context.setup.comms[static_cast<size_t>(r)]);
      state.push_back(std::move(s));
    }
  } catch (const Error& e) {
    result.status = status_of(e);
    result.reason = error_text(e);
    return result;
  }

  const BackendInfo& info = state[0]->op->backend();
  result.backend_version = info.version;
  result.backend_path = info.path;
  result.declared_forward_collectives = info.forward_collectives;
  result.declared_forward_collectives_tp2 =
      ranks == 2 ? info.forward_collectives
                 : declared_at_tp2(*runtime, spec, data, state[0]->device->dl_device());
  if (!per_token && (info.features & SY_CE_FEATURE_GRAD_IN_FORWARD) == 0) {
    result.status = Status::Skipped;
    result.reason = "the backend does not declare SY_CE_FEATURE_GRAD_IN_FORWARD";
    return result;
  }
  if (ranks == 1 && spec.tp_size > 1)
    result.notes.push_back("per-rank shape run at tp_size 1: no collectives; the TP" +
                           std::to_string(spec.tp_size) + " reduction is not in this time");
  if (ranks == 1)
    result.notes.push_back("tp_size 1: no communicator passed, so no collectives can be counted");
  result.notes.push_back(in_place ? "gradient written over the logits (in place); logits re-copied "
                                    "before every repetition, outside the timed window"
                                  : "gradient written to a separate buffer (counted as extra memory)");

  std::optional<int64_t> free_before;
  try {
    for (int r = 0; r < ranks; ++r) allocate_rank(*state[static_cast<size_t>(r)], data, r, spec, in_place);
    for (auto& s : state) s->device->flush_cache();  // its scratch buffer is not the backend's
    free_before = state[0]->device->free_memory();
  } catch (const std::exception& e) {
    result.status = Status::Error;
    result.reason = std::string("setting up the buffers failed: ") + e.what();
    return result;
  }
  result.workspace_bytes = state[0]->workspace_bytes;
  if (!in_place) result.caller_extra_bytes = data.rows * data.vocab_local * dtype_bytes(data.dtype);
  const int64_t logits_bytes = data.rows * data.vocab_local * dtype_bytes(data.dtype);

  auto refresh = [&](int rank) {
    CeRank& s = *state[static_cast<size_t>(rank)];
    if (in_place) s.device->copy_async(s.logits.data(), s.pristine.data(), logits_bytes);
  };
  auto call = [&](int rank, int phase) {
    CeRank& s = *state[static_cast<size_t>(rank)];
    if (phase == 0)
      s.op->forward(s.forward);
    else
      s.op->backward(s.backward);
  };

  PhaseCallbacks callbacks;
  callbacks.phases = per_token ? 2 : 1;
  callbacks.prepare = refresh;
  callbacks.run = call;
  if (!context.setup.comms.empty())
    callbacks.collectives = [&](int rank) { return state[static_cast<size_t>(rank)]->comm->total(); };

  try {
    const TimedPhases timed = time_phases(context, callbacks);
    result.total_ms = timed.total_ms;
    result.forward_ms = timed.phase_ms[0];
    if (per_token) result.backward_ms = timed.phase_ms[1];
    if (callbacks.collectives) {
      result.forward_collectives = timed.phase_collectives[0];
      if (per_token) result.backward_collectives = timed.phase_collectives[1];
    }
    if (free_before && timed.min_free_bytes)
      result.growth_bytes = std::max<int64_t>(0, *free_before - *timed.min_free_bytes);
  } catch (const Error& e) {
    result.status = Status::Error;
    result.reason = "a timed call failed: " + error_text(e);
    return result;
  } catch (const std::exception& e) {
    result.status = Status::Error;
    result.reason = std::string("the timed repetitions failed: ") + e.what();
    return result;
  }

  // Correctness: fresh inputs, poisoned outputs (NaN bytes), one more call, then the sample
  // rows against the float64 reference.
  std::vector<CeReadBack> read(static_cast<size_t>(ranks));
  try {
    run_once_on_ranks(context, [&](int rank) {
      CeRank& s = *state[static_cast<size_t>(rank)];
      refresh(rank);
      s.device->fill_async(s.loss.data(), 0xFF, data.rows * 4);
      s.device->fill_async(s.lse.data(), 0xFF, data.rows * 4);
      if (!in_place) s.device->fill_async(s.grad_out.data(), 0xFF, logits_bytes);
      call(rank, 0);
      if (per_token) call(rank, 1);
      s.device->synchronize("the correctness run of " + backend);
      read[static_cast<size_t>(rank)] = read_back(s, data);
    });
    result.check = compare(data, read);
  } catch (const std::exception& e) {
    result.check.ran = true;
    result.check.error = std::string("the correctness run failed: ") + e.what();
  }
  return result;
}

}  // namespace switchyard::bench
