#include "ce_group.hpp"

#include <algorithm>

#include "check_helpers.hpp"
#include "device_memory.hpp"
#include "rank_calls.hpp"

namespace switchyard::conformance {
namespace {

// Long enough for a loaded CI machine, short enough that a rank that never arrives (a plugin
// that fails on one rank only) does not stall the suite.
constexpr int kGroupTimeoutMs = 20000;

}  // namespace

CeGroup::CeGroup(const Runtime& runtime, const CeSpec& spec, const CeData& data)
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
    k.op.emplace(
        bind_operator<CrossEntropy>([&] { return runtime.cross_entropy(p); }, spec.declared));
    allocate_forward(k);
  }
}

std::vector<CallError> CeGroup::forward() {
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

std::vector<CallError> CeGroup::backward(const std::vector<double>& lse,
                                         const std::vector<double>& grad_loss) {
  for (Rank& k : ranks_) {
    const DLDevice dev = spec_.device;
    k.lse_in = std::make_unique<TensorBuffer>("lse", dev, kF32, std::vector<int64_t>{data_.rows});
    k.grad_loss =
        std::make_unique<TensorBuffer>("grad_loss", dev, kF32, std::vector<int64_t>{data_.rows});
    for (int64_t i = 0; i < data_.rows; ++i) {
      k.lse_in->set(i, lse[i]);
      k.grad_loss->set(i, grad_loss[i]);
    }
    if (spec_.backward_in_place) {
      k.backward_grad = k.logits.get();
    } else {
      k.grad_out = std::make_unique<TensorBuffer>("grad_logits", dev, spec_.grad_dtype,
                                                  std::vector<int64_t>{data_.rows, k.vocab_local},
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
    for (TensorBuffer* b :
         {k.logits.get(), k.labels.get(), k.lse_in.get(), k.grad_loss.get(), k.backward_grad})
      b->download();
  }
  return errors;
}

CeGroup::Outputs CeGroup::outputs(size_t r) const {
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

void CeGroup::check_forward_buffers(Failures& failures) const {
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
    if (k.forward_grad != nullptr && !aliased)
      report_change(failures, who, *k.forward_grad, false, "");
  }
}

void CeGroup::check_backward_buffers(Failures& failures) const {
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

void CeGroup::check_collectives(Failures& failures) const {
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

void CeGroup::synchronize() const {
  if (spec_.device.device_type == kDLCUDA) CudaRuntime::instance().synchronize(nullptr);
}

void CeGroup::report_change(Failures& failures, const std::string& who, const TensorBuffer& b,
                            bool elements, const std::string& why) {
  if (auto where = b.changed(elements))
    failures.add(who + "wrote into " + b.name() + " at " + *where + why);
}

std::vector<TensorBuffer*> CeGroup::forward_buffers(Rank& k) {
  std::vector<TensorBuffer*> out{k.logits.get(), k.labels.get(), k.loss.get(), k.lse.get()};
  for (TensorBuffer* b : {k.argmax.get(), k.grad_scale.get(), k.grad_logits.get()})
    if (b != nullptr) out.push_back(b);
  return out;
}

void CeGroup::allocate_forward(Rank& k) {
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
  k.labels =
      std::make_unique<TensorBuffer>("labels", dev, spec_.label_dtype, std::vector<int64_t>{n});
  for (int64_t i = 0; i < n; ++i) k.labels->set_int(i, data_.labels[i]);
  k.loss = std::make_unique<TensorBuffer>("loss", dev, kF32, std::vector<int64_t>{n});
  k.lse = std::make_unique<TensorBuffer>("lse", dev, kF32, std::vector<int64_t>{n});
  k.loss->poison();
  k.lse->poison();
  if (has_flag(spec_.flags, SY_CE_ARGMAX)) {
    k.argmax = std::make_unique<TensorBuffer>("argmax", dev, kI64, std::vector<int64_t>{n});
    k.argmax->poison();
  }
  if (has_flag(spec_.flags, SY_CE_GRAD_IN_FORWARD)) {
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
  k.workspace = std::make_unique<TensorBuffer>(
      "workspace", dev, kU8, std::vector<int64_t>{std::max<int64_t>(workspace_bytes, 0)});
  k.workspace->poison();
  for (TensorBuffer* b : forward_buffers(k)) {
    b->remember();
    b->upload();
  }
  k.workspace->upload();
}

}  // namespace switchyard::conformance
