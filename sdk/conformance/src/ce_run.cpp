// Running one cross-entropy case: data, the ranks' buffers, the calls, the comparisons.
#include "case.hpp"
#include "ce_case.hpp"
#include "device_memory.hpp"
#include "random_data.hpp"
#include "rank_calls.hpp"
#include "tensor_buffer.hpp"

#include <switchyard/comm.hpp>
#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_ce.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>

namespace switchyard::conformance {
namespace {

// Long enough for a loaded CI machine, short enough that a rank that never arrives (a plugin
// that fails on one rank only) does not stall the suite.
constexpr int kGroupTimeoutMs = 20000;

bool has(uint32_t flags, uint32_t flag) { return (flags & flag) != 0; }

int64_t padded_stride(int64_t cols) { return (cols + 1 + 7) / 8 * 8; }

// The global problem's data, before it is split across ranks.
struct CeData {
  int64_t rows = 0;
  int64_t vocab = 0;
  std::vector<double> logits;  // [rows, vocab], exactly representable in the logits dtype
  std::vector<int64_t> labels;
  std::vector<double> grad_scale;  // forward's g (grad in forward)
  std::vector<double> grad_loss;   // backward's g
  int64_t bad_row = -1;
  int64_t bad_label = 0;
};

std::vector<int64_t> rank_starts(const std::vector<int64_t>& split) {
  std::vector<int64_t> starts(split.size(), 0);
  for (size_t r = 1; r < split.size(); ++r) starts[r] = starts[r - 1] + split[r - 1];
  return starts;
}

CeData make_data(const CeSpec& spec) {
  Random random(spec.seed);
  CeData d;
  d.rows = spec.rows;
  d.vocab = spec.vocab;
  const int64_t v = spec.vocab;
  d.logits.resize(static_cast<size_t>(d.rows * v));
  for (int64_t i = 0; i < d.rows; ++i) {
    // Every third row sits far from zero: a plugin that skips the max subtraction overflows.
    const double offset = i % 3 == 2 ? 40.0 : 0.0;
    for (int64_t j = 0; j < v; ++j)
      d.logits[i * v + j] = round_to_dtype(offset + random.nonzero(0.05, 4.0), spec.logits_dtype);
  }
  if (spec.argmax_ties && v >= 2) {
    const auto starts = rank_starts(spec.split);
    const int tp = static_cast<int>(spec.split.size());
    for (int64_t i = 0; i < d.rows; ++i) {
      int64_t a, b;
      if (tp > 1) {  // the two maxima on two different ranks, the lower id on the lower rank
        const int low = static_cast<int>(i % (tp - 1));
        const int high = static_cast<int>(low + 1 + random.integer(0, tp - 1 - low));
        a = starts[low] + random.integer(0, spec.split[low]);
        b = starts[high] + random.integer(0, spec.split[high]);
      } else {
        a = random.integer(0, v - 1);
        b = random.integer(a + 1, v);
      }
      double* row = d.logits.data() + i * v;
      const double top = round_to_dtype(*std::max_element(row, row + v) + 1.0, spec.logits_dtype);
      row[a] = top;
      row[b] = top;
    }
  }
  const bool check = has(spec.flags, SY_CE_CHECK_LABELS);
  const bool ignore = has(spec.flags, SY_CE_IGNORE_INDEX);
  d.labels.resize(static_cast<size_t>(d.rows));
  for (int64_t i = 0; i < d.rows; ++i) {
    int64_t label = random.integer(0, v);
    if (i % 7 == 3 && (ignore || !check)) label = spec.ignore_index;  // ignored, or out of range
    if (i % 7 == 5 && !check) label = i % 2 != 0 ? -1 : v + i;        // owned by no rank
    d.labels[i] = label;
  }
  if (spec.check == CeCheck::BadLabelRefused) {
    d.bad_row = std::max<int64_t>(0, d.rows - 2);
    d.bad_label = v + 7919;
    d.labels[d.bad_row] = d.bad_label;
  }
  for (int64_t i = 0; i < d.rows; ++i) {
    d.grad_scale.push_back(random.uniform(0.05, 1.05));
    d.grad_loss.push_back(random.uniform(0.05, 1.05));
  }
  return d;
}

CeData subset(const CeData& d, int64_t begin, int64_t end) {
  CeData s = d;
  s.rows = end - begin;
  s.logits.assign(d.logits.begin() + begin * d.vocab, d.logits.begin() + end * d.vocab);
  s.labels.assign(d.labels.begin() + begin, d.labels.begin() + end);
  s.grad_scale.assign(d.grad_scale.begin() + begin, d.grad_scale.begin() + end);
  s.grad_loss.assign(d.grad_loss.begin() + begin, d.grad_loss.begin() + end);
  return s;
}

CeReferenceProblem reference_problem(const CeSpec& spec, int64_t rows) {
  CeReferenceProblem p;
  p.rows = rows;
  p.vocab = spec.vocab;
  p.label_smoothing = static_cast<double>(spec.label_smoothing);  // the float the plugin sees
  p.smoothing = spec.smoothing;
  p.ignore_index = spec.ignore_index;
  p.flags = spec.flags;
  return p;
}

std::string rank_prefix(size_t ranks, size_t r) {
  return ranks > 1 ? "rank" + std::to_string(r) + " " : "";
}

// The ranks of one run: each bound to its own problem, with its own buffers.
class CeGroup {
 public:
  struct Outputs {
    std::vector<double> loss, lse, grad;  // grad: [rows, Vp], from forward or backward
    std::vector<int64_t> argmax;
  };

  CeGroup(const Runtime& runtime, const CeSpec& spec, const CeData& data)
      : spec_(spec), data_(data) {
    const int tp = static_cast<int>(spec.split.size());
    const auto starts = rank_starts(spec.split);
    if (tp > 1) group_ = std::make_unique<ThreadGroup>(tp, kGroupTimeoutMs);
    ranks_.resize(static_cast<size_t>(tp));
    for (int r = 0; r < tp; ++r) {
      Rank& k = ranks_[r];
      k.vocab_local = spec.split[r];
      k.vocab_start = starts[r];
      sy_ce_problem& p = k.problem;
      p.struct_size = sizeof(sy_ce_problem);
      p.rows = data.rows;
      p.vocab_local = k.vocab_local;
      p.vocab_start = k.vocab_start;
      p.vocab_size = spec.vocab;
      p.logits_dtype = spec.logits_dtype;
      p.label_dtype = spec.label_dtype;
      p.grad_dtype = spec.grad_dtype;
      p.device = spec.device;
      p.tp_size = tp;
      p.label_smoothing = spec.label_smoothing;
      p.smoothing = spec.smoothing;
      p.ignore_index = spec.ignore_index;
      p.flags = spec.flags;
      k.op.emplace(bind_operator<CrossEntropy>([&] { return runtime.cross_entropy(p); },
                                               spec.declared));
      allocate_forward(k);
    }
  }

  size_t ranks() const { return ranks_.size(); }

  std::vector<CallError> forward() {
    if (group_) group_->reset_counts();
    std::vector<CallError> errors(ranks_.size());
    run_on_ranks(static_cast<int>(ranks_.size()), [&](int r) {
      Rank& k = ranks_[r];
      sy_ce_forward_args a{};
      a.struct_size = sizeof a;
      a.problem = &k.problem;
      a.logits = k.logits->tensor();
      a.labels = k.labels->tensor();
      a.loss = k.loss->tensor();
      a.lse = k.lse->tensor();
      a.argmax = k.argmax ? k.argmax->tensor() : nullptr;
      a.grad_scale = k.grad_scale ? k.grad_scale->tensor() : nullptr;
      a.grad_logits = k.forward_grad ? k.forward_grad->tensor() : nullptr;
      a.workspace = k.workspace->address();
      a.workspace_bytes = k.workspace->size();
      a.tp = group_ ? group_->comm(r) : nullptr;
      a.stream = nullptr;
      errors[r] = invoke([&] {
        k.op->forward(a);
        synchronize();
      });
    });
    for (size_t r = 0; r < ranks_.size(); ++r) {
      Rank& k = ranks_[r];
      for (TensorBuffer* b : forward_buffers(k)) b->download();
      if (group_) k.collectives = group_->collectives(static_cast<int32_t>(r));
    }
    return errors;
  }

  // lse and grad_loss: [rows], the same on every rank.
  std::vector<CallError> backward(const std::vector<double>& lse, const std::vector<double>& grad_loss) {
    for (Rank& k : ranks_) {
      const DLDevice dev = spec_.device;
      k.lse_in = std::make_unique<TensorBuffer>("lse", dev, kF32, std::vector<int64_t>{data_.rows});
      k.grad_loss = std::make_unique<TensorBuffer>("grad_loss", dev, kF32, std::vector<int64_t>{data_.rows});
      for (int64_t i = 0; i < data_.rows; ++i) {
        k.lse_in->set(i, lse[i]);
        k.grad_loss->set(i, grad_loss[i]);
      }
      if (spec_.backward_in_place) {
        k.backward_grad = k.logits.get();
      } else {
        k.grad_out = std::make_unique<TensorBuffer>(
            "grad_logits", dev, spec_.grad_dtype, std::vector<int64_t>{data_.rows, k.vocab_local},
            spec_.strided ? padded_stride(k.vocab_local) : 0);
        k.grad_out->poison();
        k.backward_grad = k.grad_out.get();
      }
      for (TensorBuffer* b : {k.lse_in.get(), k.grad_loss.get(), k.backward_grad}) {
        b->remember();
        b->upload();
      }
      k.logits->remember();
      k.workspace->poison();
      k.workspace->upload();
    }
    std::vector<CallError> errors(ranks_.size());
    // No collectives in backward: the ranks run one after the other.
    for (size_t r = 0; r < ranks_.size(); ++r) {
      Rank& k = ranks_[r];
      sy_ce_backward_args a{};
      a.struct_size = sizeof a;
      a.problem = &k.problem;
      a.logits = k.logits->tensor();
      a.labels = k.labels->tensor();
      a.lse = k.lse_in->tensor();
      a.grad_loss = k.grad_loss->tensor();
      a.grad_logits = k.backward_grad->tensor();
      a.workspace = k.workspace->address();
      a.workspace_bytes = k.workspace->size();
      a.stream = nullptr;
      errors[r] = invoke([&] {
        k.op->backward(a);
        synchronize();
      });
      for (TensorBuffer* b : {k.logits.get(), k.labels.get(), k.lse_in.get(), k.grad_loss.get(), k.backward_grad})
        b->download();
    }
    return errors;
  }

  Outputs outputs(size_t r) const {
    const Rank& k = ranks_[r];
    Outputs o;
    o.loss = k.loss->values();
    o.lse = k.lse->values();
    if (k.argmax) o.argmax = k.argmax->ints();
    if (k.backward_grad != nullptr)
      o.grad = k.backward_grad->values();
    else if (k.forward_grad != nullptr)
      o.grad = k.forward_grad->values();
    return o;
  }

  int64_t vocab_local(size_t r) const { return ranks_[r].vocab_local; }
  int64_t vocab_start(size_t r) const { return ranks_[r].vocab_start; }

  // Inputs unchanged (logits survive forward unless they receive the gradient); nothing
  // written outside the outputs' elements.
  void check_forward_buffers(Failures& failures) const {
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const Rank& k = ranks_[r];
      const std::string who = rank_prefix(ranks_.size(), r) + "forward ";
      const bool aliased = k.forward_grad == k.logits.get();
      report_change(failures, who, *k.logits, !aliased,
                    aliased ? "" : " (logits must survive forward)");
      report_change(failures, who, *k.labels, true, "");
      if (k.grad_scale) report_change(failures, who, *k.grad_scale, true, "");
      for (const TensorBuffer* out : {k.loss.get(), k.lse.get(), k.argmax.get()})
        if (out != nullptr) report_change(failures, who, *out, false, "");
      if (k.forward_grad != nullptr && !aliased) report_change(failures, who, *k.forward_grad, false, "");
    }
  }

  void check_backward_buffers(Failures& failures) const {
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const Rank& k = ranks_[r];
      const std::string who = rank_prefix(ranks_.size(), r) + "backward ";
      const bool in_place = k.backward_grad == k.logits.get();
      report_change(failures, who, *k.logits, !in_place, "");
      report_change(failures, who, *k.labels, true, "");
      report_change(failures, who, *k.lse_in, true, "");
      report_change(failures, who, *k.grad_loss, true, "");
      if (!in_place) report_change(failures, who, *k.backward_grad, false, "");
    }
  }

  // The plugin states how many collectives a forward issues; the thread group counts them.
  void check_collectives(Failures& failures) const {
    if (!group_) return;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const Rank& k = ranks_[r];
      const int32_t stated = k.op->backend().forward_collectives;
      if (stated >= 0 && stated != k.collectives)
        failures.add(rank_prefix(ranks_.size(), r) + "forward issued " +
                     std::to_string(k.collectives) + " collectives but the plugin states " +
                     std::to_string(stated) + " (forward_collectives)");
    }
  }

 private:
  struct Rank {
    sy_ce_problem problem{};
    std::optional<CrossEntropy> op;
    int64_t vocab_local = 0;
    int64_t vocab_start = 0;
    std::unique_ptr<TensorBuffer> logits, labels, loss, lse, argmax, grad_scale, grad_logits,
        workspace, lse_in, grad_loss, grad_out;
    TensorBuffer* forward_grad = nullptr;   // where forward writes the gradient, if it does
    TensorBuffer* backward_grad = nullptr;  // where backward writes it
    int64_t collectives = 0;
  };

  void synchronize() const {
    if (spec_.device.device_type == kDLCUDA) CudaRuntime::instance().synchronize(nullptr);
  }

  static void report_change(Failures& failures, const std::string& who, const TensorBuffer& b,
                            bool elements, const std::string& why) {
    if (auto where = b.changed(elements))
      failures.add(who + "wrote into " + b.name() + " at " + *where + why);
  }

  std::vector<TensorBuffer*> forward_buffers(Rank& k) {
    std::vector<TensorBuffer*> out{k.logits.get(), k.labels.get(), k.loss.get(), k.lse.get()};
    for (TensorBuffer* b : {k.argmax.get(), k.grad_scale.get(), k.grad_logits.get()})
      if (b != nullptr) out.push_back(b);
    return out;
  }

  void allocate_forward(Rank& k) {
    const DLDevice dev = spec_.device;
    const int64_t n = data_.rows;
    const int64_t vp = k.vocab_local;
    const int64_t stride = spec_.strided ? padded_stride(vp) : 0;
    k.logits = std::make_unique<TensorBuffer>("logits", dev, spec_.logits_dtype,
                                              std::vector<int64_t>{n, vp}, stride);
    k.logits->poison();  // the padding stays NaN: reading it would show
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < vp; ++j)
        k.logits->set(i * vp + j, data_.logits[i * data_.vocab + k.vocab_start + j]);
    k.labels = std::make_unique<TensorBuffer>("labels", dev, spec_.label_dtype, std::vector<int64_t>{n});
    for (int64_t i = 0; i < n; ++i) k.labels->set_int(i, data_.labels[i]);
    k.loss = std::make_unique<TensorBuffer>("loss", dev, kF32, std::vector<int64_t>{n});
    k.lse = std::make_unique<TensorBuffer>("lse", dev, kF32, std::vector<int64_t>{n});
    k.loss->poison();
    k.lse->poison();
    if (has(spec_.flags, SY_CE_ARGMAX)) {
      k.argmax = std::make_unique<TensorBuffer>("argmax", dev, kI64, std::vector<int64_t>{n});
      k.argmax->poison();
    }
    if (has(spec_.flags, SY_CE_GRAD_IN_FORWARD)) {
      k.grad_scale = std::make_unique<TensorBuffer>("grad_scale", dev, kF32, std::vector<int64_t>{n});
      for (int64_t i = 0; i < n; ++i) k.grad_scale->set(i, data_.grad_scale[i]);
      if (spec_.grad_in_forward_aliased) {
        k.forward_grad = k.logits.get();
      } else {
        k.grad_logits = std::make_unique<TensorBuffer>("grad_logits", dev, spec_.grad_dtype,
                                                       std::vector<int64_t>{n, vp}, stride);
        k.grad_logits->poison();
        k.forward_grad = k.grad_logits.get();
      }
    }
    const int64_t workspace_bytes = k.op->workspace_size();
    k.workspace = std::make_unique<TensorBuffer>("workspace", dev, kU8,
                                                 std::vector<int64_t>{std::max<int64_t>(workspace_bytes, 0)});
    k.workspace->poison();
    for (TensorBuffer* b : forward_buffers(k)) {
      b->remember();
      b->upload();
    }
    k.workspace->upload();
  }

  const CeSpec& spec_;
  const CeData& data_;
  std::unique_ptr<ThreadGroup> group_;
  std::vector<Rank> ranks_;
};

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::fmax(m, std::fabs(x));
  return m;
}

// Columns [start, start + width) of a [rows, vocab] matrix.
std::vector<double> columns(const std::vector<double>& m, int64_t rows, int64_t vocab,
                            int64_t start, int64_t width) {
  std::vector<double> out(static_cast<size_t>(rows * width));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < width; ++j) out[i * width + j] = m[i * vocab + start + j];
  return out;
}

std::vector<double> to_fp32(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  for (size_t k = 0; k < v.size(); ++k) out[k] = static_cast<float>(v[k]);
  return out;
}

void compare(Failures& failures, const std::string& name, const std::vector<double>& got,
             const std::vector<double>& expected, const Tolerance& tolerance, int64_t columns,
             const std::vector<double>* scale = nullptr) {
  if (auto m = find_mismatch(got, expected, tolerance, scale))
    failures.add(describe_mismatch(name, *m, columns));
}

void compare_ids(Failures& failures, const std::string& name, const std::vector<int64_t>& got,
                 const std::vector<int64_t>& expected) {
  int64_t bad = 0, first = -1;
  for (size_t k = 0; k < expected.size(); ++k)
    if (got[k] != expected[k] && bad++ == 0) first = static_cast<int64_t>(k);
  if (bad == 0) return;
  const bool poison = got[first] == kArgmaxPoison;
  failures.add("first wrong " + name + "[" + std::to_string(first) + "] got " +
               std::to_string(got[first]) + (poison ? " (the poison: never written)" : "") +
               " expected " + std::to_string(expected[first]) + " (" + std::to_string(bad) +
               " of " + std::to_string(expected.size()) + " rows)");
}

// Forward outputs of every rank against the reference.
void compare_forward(const CeSpec& spec, const CeGroup& group, const CeReferenceForward& ref,
                     Failures& failures) {
  std::vector<double> loss_scale(ref.loss.size());
  // loss = lse - z_t: its fp32 error grows with lse, so rtol is taken of max(|loss|, |lse|).
  for (size_t i = 0; i < ref.loss.size(); ++i)
    loss_scale[i] = std::fmax(std::fabs(ref.loss[i]), std::fabs(ref.lse[i]));
  const Tolerance loss_tol = statistic_tolerance(spec.logits_dtype, max_abs(ref.loss));
  const Tolerance lse_tol = statistic_tolerance(spec.logits_dtype, max_abs(ref.lse));
  const Tolerance grad_tol = elementwise_tolerance(spec.grad_dtype, max_abs(ref.grad));
  const int64_t rows = static_cast<int64_t>(ref.loss.size());
  for (size_t r = 0; r < group.ranks(); ++r) {
    const auto out = group.outputs(r);
    const std::string p = rank_prefix(group.ranks(), r);
    compare(failures, p + "loss", out.loss, ref.loss, loss_tol, 0, &loss_scale);
    compare(failures, p + "lse", out.lse, ref.lse, lse_tol, 0);
    if (has(spec.flags, SY_CE_ARGMAX)) compare_ids(failures, p + "argmax", out.argmax, ref.argmax);
    if (has(spec.flags, SY_CE_GRAD_IN_FORWARD)) {
      const int64_t vp = group.vocab_local(r);
      const auto magnitude = columns(ref.grad_magnitude, rows, spec.vocab, group.vocab_start(r), vp);
      compare(failures, p + "grad_logits (forward)", out.grad,
              columns(ref.grad, rows, spec.vocab, group.vocab_start(r), vp), grad_tol, vp, &magnitude);
    }
  }
}

std::string run_numeric(const Runtime& runtime, const CeSpec& spec) {
  const CeData data = make_data(spec);
  CeGroup group(runtime, spec, data);
  fail_on_errors("forward", group.forward());

  const CeReferenceProblem rp = reference_problem(spec, data.rows);
  const bool grad_in_forward = has(spec.flags, SY_CE_GRAD_IN_FORWARD);
  const CeReferenceForward ref =
      reference_ce_forward(rp, data.logits, data.labels, grad_in_forward ? &data.grad_scale : nullptr);
  Failures failures;
  compare_forward(spec, group, ref, failures);
  group.check_forward_buffers(failures);
  group.check_collectives(failures);

  if (!grad_in_forward) {
    // Backward gets the reference lse (as fp32), so its check does not depend on forward.
    const std::vector<double> lse = to_fp32(ref.lse);
    fail_on_errors("backward", group.backward(lse, data.grad_loss));
    const auto ref_grad = reference_ce_backward(rp, data.logits, data.labels, lse, data.grad_loss);
    const Tolerance grad_tol = elementwise_tolerance(spec.grad_dtype, max_abs(ref_grad.grad));
    for (size_t r = 0; r < group.ranks(); ++r) {
      const int64_t vp = group.vocab_local(r), start = group.vocab_start(r);
      const auto magnitude = columns(ref_grad.grad_magnitude, data.rows, spec.vocab, start, vp);
      compare(failures, rank_prefix(group.ranks(), r) + "grad_logits", group.outputs(r).grad,
              columns(ref_grad.grad, data.rows, spec.vocab, start, vp), grad_tol, vp, &magnitude);
    }
    group.check_backward_buffers(failures);
  }
  failures.throw_if_any();
  return describe_ce(spec);
}

// Forward, then backward from the plugin's own lse (as a training step does).
std::vector<CeGroup::Outputs> run_step(const Runtime& runtime, const CeSpec& spec, const CeData& data) {
  CeGroup group(runtime, spec, data);
  fail_on_errors("forward", group.forward());
  if (!has(spec.flags, SY_CE_GRAD_IN_FORWARD))
    fail_on_errors("backward", group.backward(group.outputs(0).lse, data.grad_loss));
  std::vector<CeGroup::Outputs> out;
  for (size_t r = 0; r < group.ranks(); ++r) out.push_back(group.outputs(r));
  return out;
}

std::vector<double> as_doubles(const std::vector<int64_t>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// Rows [row, row + count) of `a` (with `row_width` values per row) against rows
// [0, count) of `b`, bit for bit. Adds a failure for the first difference.
void compare_bits(Failures& failures, const std::string& what, const std::vector<double>& a,
                  int64_t row, const std::vector<double>& b, int64_t count, int64_t row_width) {
  const std::vector<double> slice(a.begin() + row * row_width, a.begin() + (row + count) * row_width);
  if (auto k = first_bit_difference(slice, b)) {
    const int64_t i = row + *k / row_width;
    const std::string index = row_width > 1 ? std::to_string(i) + "," + std::to_string(*k % row_width)
                                            : std::to_string(i);
    failures.add(what + ": " + "[" + index + "] " + format_number(slice[*k]) + " vs " +
                 format_number(b[*k]));
  }
}

std::string run_replay(const Runtime& runtime, const CeSpec& spec) {
  const CeData data = make_data(spec);
  const auto first = run_step(runtime, spec, data);
  const auto second = run_step(runtime, spec, data);
  Failures failures;
  for (size_t r = 0; r < first.size(); ++r) {
    const std::string p = "two identical runs differ in " + rank_prefix(first.size(), r);
    compare_bits(failures, p + "loss", first[r].loss, 0, second[r].loss, data.rows, 1);
    compare_bits(failures, p + "lse", first[r].lse, 0, second[r].lse, data.rows, 1);
    compare_bits(failures, p + "argmax", as_doubles(first[r].argmax), 0, as_doubles(second[r].argmax),
                 static_cast<int64_t>(first[r].argmax.size()), 1);
    compare_bits(failures, p + "grad_logits", first[r].grad, 0, second[r].grad, data.rows,
                 spec.split[r]);
  }
  failures.throw_if_any();
  return describe_ce(spec) + " (2 runs bit-identical)";
}

std::string run_batch_invariance(const Runtime& runtime, const CeSpec& spec) {
  const CeData data = make_data(spec);
  const auto full = run_step(runtime, spec, data);
  const int64_t n = data.rows;
  // One row alone (first, middle) and a smaller batch that starts mid-way.
  const std::vector<std::pair<int64_t, int64_t>> batches{{0, 1}, {n / 2, n / 2 + 1}, {n / 3, n}};
  Failures failures;
  for (const auto& [begin, end] : batches) {
    CeSpec sub_spec = spec;
    sub_spec.rows = end - begin;
    const CeData sub_data = subset(data, begin, end);
    const auto part = run_step(runtime, sub_spec, sub_data);
    const int64_t count = end - begin;
    for (size_t r = 0; r < full.size(); ++r) {
      const std::string p = "rows " + std::to_string(begin) + ".." + std::to_string(end - 1) +
                            " computed as a batch of " + std::to_string(count) +
                            " differ from the batch of " + std::to_string(n) + " in " +
                            rank_prefix(full.size(), r);
      compare_bits(failures, p + "loss", full[r].loss, begin, part[r].loss, count, 1);
      compare_bits(failures, p + "lse", full[r].lse, begin, part[r].lse, count, 1);
      if (!full[r].argmax.empty())
        compare_bits(failures, p + "argmax", as_doubles(full[r].argmax), begin,
                     as_doubles(part[r].argmax), count, 1);
      compare_bits(failures, p + "grad_logits", full[r].grad, begin, part[r].grad, count,
                   spec.split[r]);
    }
  }
  failures.throw_if_any();
  return describe_ce(spec) + " (rows alone and in smaller batches bit-identical)";
}

std::string run_bad_label(const Runtime& runtime, const CeSpec& spec) {
  const CeData data = make_data(spec);
  CeGroup group(runtime, spec, data);
  const auto errors = group.forward();
  const std::string row = std::to_string(data.bad_row);
  const std::string value = std::to_string(data.bad_label);
  Failures failures;
  for (size_t r = 0; r < errors.size(); ++r) {
    const std::string p = rank_prefix(errors.size(), r);
    const CallError& e = errors[r];
    if (e.status == SY_OK) {
      failures.add(p + "forward accepted label " + value + " (vocabulary " + std::to_string(spec.vocab) +
                   ") in row " + row + " with SY_CE_CHECK_LABELS; expected SY_ERR_INVALID_ARGUMENT");
      continue;
    }
    if (e.status != SY_ERR_INVALID_ARGUMENT)
      failures.add(p + "forward refused the bad label with " + e.describe() +
                   "; expected SY_ERR_INVALID_ARGUMENT");
    else if (e.message.find(value) == std::string::npos || e.message.find(row) == std::string::npos)
      failures.add(p + "the error does not name row " + row + " and label " + value + ": \"" +
                   e.message + "\"");
    // Nothing the caller could mistake for a result.
    const auto out = group.outputs(r);
    for (const auto* v : {&out.loss, &out.lse})
      for (size_t i = 0; i < v->size(); ++i)
        if (std::isfinite((*v)[i])) {
          failures.add(p + "forward refused but wrote " + std::string(v == &out.loss ? "loss" : "lse") +
                       "[" + std::to_string(i) + "] = " + format_number((*v)[i]) +
                       ", which a caller could take for a result");
          i = v->size();
        }
  }
  failures.throw_if_any();
  return describe_ce(spec) + " (label " + value + " in row " + row + " refused)";
}

std::string run_gathered_logits(const Runtime& runtime, const CeSpec& spec) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = spec.rows;
  p.vocab_local = spec.vocab;
  p.vocab_start = 0;
  p.vocab_size = spec.vocab;
  p.logits_dtype = spec.logits_dtype;
  p.label_dtype = spec.label_dtype;
  p.grad_dtype = spec.grad_dtype;
  p.device = spec.device;
  p.tp_size = static_cast<int32_t>(spec.split.size());
  p.ignore_index = spec.ignore_index;
  try {
    (void)runtime.cross_entropy(p);
  } catch (const Error& e) {
    return "refused with " + std::string(status_name(e.status()));
  }
  throw CaseFailure{"accepted vocab_local == vocab_size == " + std::to_string(spec.vocab) +
                    " with tp_size " + std::to_string(p.tp_size) +
                    " (already-gathered logits, Megatron-LM#7452); supports() must refuse it"};
}

std::string split_text(const std::vector<int64_t>& split) {
  std::string out;
  for (size_t r = 0; r < split.size(); ++r) out += (r ? "+" : "") + std::to_string(split[r]);
  return out;
}

}  // namespace

std::string describe_ce(const CeSpec& spec) {
  std::string d = "N=" + std::to_string(spec.rows) + " V=" + std::to_string(spec.vocab);
  if (spec.split.size() > 1) d += " Vp=" + split_text(spec.split);
  d += " logits=" + short_dtype_name(spec.logits_dtype) + " labels=" +
       short_dtype_name(spec.label_dtype) + " grad=" + short_dtype_name(spec.grad_dtype);
  if (spec.label_smoothing != 0)
    d += std::string(" alpha=") + std::to_string(spec.label_smoothing).substr(0, 6) +
         (spec.smoothing == SY_SMOOTHING_PYTORCH ? "(pytorch)" : "(megatron)");
  if (has(spec.flags, SY_CE_IGNORE_INDEX)) d += " ignore_index=" + std::to_string(spec.ignore_index);
  if (has(spec.flags, SY_CE_ARGMAX)) d += " argmax";
  if (has(spec.flags, SY_CE_GRAD_IN_FORWARD))
    d += spec.grad_in_forward_aliased ? " grad-in-forward(over logits)" : " grad-in-forward";
  if (has(spec.flags, SY_CE_CHECK_LABELS)) d += " check-labels";
  if (spec.strided) d += " strided";
  if (spec.backward_in_place) d += " backward-in-place";
  return d;
}

std::string run_ce_case(const Runtime& runtime, const CeSpec& spec) {
  switch (spec.check) {
    case CeCheck::Numeric: return run_numeric(runtime, spec);
    case CeCheck::Replay: return run_replay(runtime, spec);
    case CeCheck::BatchInvariance: return run_batch_invariance(runtime, spec);
    case CeCheck::BadLabelRefused: return run_bad_label(runtime, spec);
    case CeCheck::GatheredLogitsRefused: return run_gathered_logits(runtime, spec);
  }
  return {};
}

}  // namespace switchyard::conformance
