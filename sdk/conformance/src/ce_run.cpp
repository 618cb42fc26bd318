// The checks of one cross-entropy case: numbers against the reference, replay, batch
// invariance and the refusals.
#include <cctype>
#include <cmath>
#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_ce.hpp>

#include "case.hpp"
#include "ce_case.hpp"
#include "ce_data.hpp"
#include "ce_group.hpp"
#include "check_helpers.hpp"
#include "rank_calls.hpp"

namespace switchyard::conformance {
namespace {

// Columns [start, start + width) of a [rows, vocab] matrix.
std::vector<double> columns(const std::vector<double>& m, int64_t rows, int64_t vocab,
                            int64_t start, int64_t width) {
  std::vector<double> out(static_cast<size_t>(rows * width));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < width; ++j) out[i * width + j] = m[i * vocab + start + j];
  return out;
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
    compare_values(failures, p + "loss", out.loss, ref.loss, loss_tol, 0, &loss_scale);
    compare_values(failures, p + "lse", out.lse, ref.lse, lse_tol, 0);
    if (has_flag(spec.flags, SY_CE_ARGMAX))
      compare_ids(failures, p + "argmax", out.argmax, ref.argmax);
    if (has_flag(spec.flags, SY_CE_GRAD_IN_FORWARD)) {
      const int64_t vp = group.vocab_local(r);
      const auto magnitude =
          columns(ref.grad_magnitude, rows, spec.vocab, group.vocab_start(r), vp);
      compare_values(failures, p + "grad_logits (forward)", out.grad,
                     columns(ref.grad, rows, spec.vocab, group.vocab_start(r), vp), grad_tol, vp,
                     &magnitude);
    }
  }
}

std::string run_numeric(const Runtime& runtime, const CeSpec& spec) {
  const CeData data = make_ce_data(spec);
  CeGroup group(runtime, spec, data);
  fail_on_errors("forward", group.forward());

  const CeReferenceProblem rp = ce_reference_problem(spec, data.rows);
  const bool grad_in_forward = has_flag(spec.flags, SY_CE_GRAD_IN_FORWARD);
  const CeReferenceForward ref = reference_ce_forward(rp, data.logits, data.labels,
                                                      grad_in_forward ? &data.grad_scale : nullptr);
  Failures failures;
  compare_forward(spec, group, ref, failures);
  group.check_forward_buffers(failures);
  group.check_collectives(failures);

  if (!grad_in_forward) {
    // Backward gets the reference lse (as fp32), so its check does not depend on forward.
    const std::vector<double> lse = rounded(ref.lse, kF32);
    fail_on_errors("backward", group.backward(lse, data.grad_loss));
    const auto ref_grad = reference_ce_backward(rp, data.logits, data.labels, lse, data.grad_loss);
    const Tolerance grad_tol = elementwise_tolerance(spec.grad_dtype, max_abs(ref_grad.grad));
    for (size_t r = 0; r < group.ranks(); ++r) {
      const int64_t vp = group.vocab_local(r), start = group.vocab_start(r);
      const auto magnitude = columns(ref_grad.grad_magnitude, data.rows, spec.vocab, start, vp);
      compare_values(failures, rank_prefix(group.ranks(), r) + "grad_logits", group.outputs(r).grad,
                     columns(ref_grad.grad, data.rows, spec.vocab, start, vp), grad_tol, vp,
                     &magnitude);
    }
    group.check_backward_buffers(failures);
  }
  failures.throw_if_any();
  return describe_ce(spec);
}

// Forward, then backward from the plugin's own lse (as a training step does).
std::vector<CeGroup::Outputs> run_step(const Runtime& runtime, const CeSpec& spec,
                                       const CeData& data) {
  CeGroup group(runtime, spec, data);
  fail_on_errors("forward", group.forward());
  if (!has_flag(spec.flags, SY_CE_GRAD_IN_FORWARD))
    fail_on_errors("backward", group.backward(group.outputs(0).lse, data.grad_loss));
  std::vector<CeGroup::Outputs> out;
  for (size_t r = 0; r < group.ranks(); ++r) out.push_back(group.outputs(r));
  return out;
}

std::vector<double> as_doubles(const std::vector<int64_t>& v) {
  return std::vector<double>(v.begin(), v.end());
}

std::string run_replay(const Runtime& runtime, const CeSpec& spec) {
  const CeData data = make_ce_data(spec);
  const auto first = run_step(runtime, spec, data);
  const auto second = run_step(runtime, spec, data);
  Failures failures;
  for (size_t r = 0; r < first.size(); ++r) {
    const std::string p = "two identical runs differ in " + rank_prefix(first.size(), r);
    compare_bits(failures, p + "loss", first[r].loss, 0, second[r].loss, data.rows, 1);
    compare_bits(failures, p + "lse", first[r].lse, 0, second[r].lse, data.rows, 1);
    compare_bits(failures, p + "argmax", as_doubles(first[r].argmax), 0,
                 as_doubles(second[r].argmax), static_cast<int64_t>(first[r].argmax.size()), 1);
    compare_bits(failures, p + "grad_logits", first[r].grad, 0, second[r].grad, data.rows,
                 spec.split[r]);
  }
  failures.throw_if_any();
  return describe_ce(spec) + " (2 runs bit-identical)";
}

std::string run_batch_invariance(const Runtime& runtime, const CeSpec& spec) {
  const CeData data = make_ce_data(spec);
  const auto full = run_step(runtime, spec, data);
  const int64_t n = data.rows;
  // One row alone (first, middle) and a smaller batch that starts mid-way.
  const std::vector<std::pair<int64_t, int64_t>> batches{{0, 1}, {n / 2, n / 2 + 1}, {n / 3, n}};
  Failures failures;
  for (const auto& [begin, end] : batches) {
    CeSpec sub_spec = spec;
    sub_spec.rows = end - begin;
    const CeData sub_data = ce_data_rows(data, begin, end);
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

// True when `number` appears in `text` as a whole number ("row 5", "labels[5]", not "50").
bool names_number(const std::string& text, const std::string& number) {
  for (size_t at = text.find(number); at != std::string::npos; at = text.find(number, at + 1)) {
    const bool starts = at == 0 || !std::isdigit(static_cast<unsigned char>(text[at - 1]));
    const size_t end = at + number.size();
    const bool ends = end == text.size() || !std::isdigit(static_cast<unsigned char>(text[end]));
    if (starts && ends) return true;
  }
  return false;
}

std::string run_bad_label(const Runtime& runtime, const CeSpec& spec) {
  const CeData data = make_ce_data(spec);
  CeGroup group(runtime, spec, data);
  const auto errors = group.forward();
  const std::string row = std::to_string(data.bad_row);
  const std::string value = std::to_string(data.bad_label);
  Failures failures;
  for (size_t r = 0; r < errors.size(); ++r) {
    const std::string p = rank_prefix(errors.size(), r);
    const CallError& e = errors[r];
    if (e.status == SY_OK) {
      failures.add(p + "forward accepted label " + value + " (vocabulary " +
                   std::to_string(spec.vocab) + ") in row " + row +
                   " with SY_CE_CHECK_LABELS; expected SY_ERR_INVALID_ARGUMENT");
      continue;
    }
    if (e.status != SY_ERR_INVALID_ARGUMENT)
      failures.add(p + "forward refused the bad label with " + e.describe() +
                   "; expected SY_ERR_INVALID_ARGUMENT");
    else if (!names_number(e.message, value) || !names_number(e.message, row))
      failures.add(p + "the error does not name row " + row + " and label " + value + ": \"" +
                   e.message + "\"");
    // Nothing the caller could mistake for a result.
    const auto out = group.outputs(r);
    for (const auto* v : {&out.loss, &out.lse})
      for (size_t i = 0; i < v->size(); ++i)
        if (std::isfinite((*v)[i])) {
          failures.add(p + "forward refused but wrote " +
                       std::string(v == &out.loss ? "loss" : "lse") + "[" + std::to_string(i) +
                       "] = " + format_number((*v)[i]) +
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
  d += " logits=" + short_dtype_name(spec.logits_dtype) +
       " labels=" + short_dtype_name(spec.label_dtype) +
       " grad=" + short_dtype_name(spec.grad_dtype);
  if (spec.label_smoothing != 0)
    d += std::string(" alpha=") + std::to_string(spec.label_smoothing).substr(0, 6) +
         (spec.smoothing == SY_SMOOTHING_PYTORCH ? "(pytorch)" : "(megatron)");
  if (has_flag(spec.flags, SY_CE_IGNORE_INDEX))
    d += " ignore_index=" + std::to_string(spec.ignore_index);
  if (has_flag(spec.flags, SY_CE_ARGMAX)) d += " argmax";
  if (has_flag(spec.flags, SY_CE_GRAD_IN_FORWARD))
    d += spec.grad_in_forward_aliased ? " grad-in-forward(over logits)" : " grad-in-forward";
  if (has_flag(spec.flags, SY_CE_CHECK_LABELS)) d += " check-labels";
  if (spec.strided) d += " strided";
  if (spec.backward_in_place) d += " backward-in-place";
  return d;
}

std::string run_ce_case(const Runtime& runtime, const CeSpec& spec) {
  switch (spec.check) {
    case CeCheck::Numeric:
      return run_numeric(runtime, spec);
    case CeCheck::Replay:
      return run_replay(runtime, spec);
    case CeCheck::BatchInvariance:
      return run_batch_invariance(runtime, spec);
    case CeCheck::BadLabelRefused:
      return run_bad_label(runtime, spec);
    case CeCheck::GatheredLogitsRefused:
      return run_gathered_logits(runtime, spec);
  }
  return {};
}

}  // namespace switchyard::conformance
