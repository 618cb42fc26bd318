// Each rank builds the same global data, keeps its columns, runs the plugin's forward (and
// backward) on its GPU with the NCCL communicator, and compares every output with the float64
// reference of the conformance suite (switchyard/conformance/reference_ce.hpp): the very same
// reference `switchyard check` uses, not a second one.
#include "tp_ce_cases.hpp"

#include "ce_call_args.hpp"
#include "gpu_tensor.hpp"

#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_ce.hpp>
#include <switchyard/float16.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace gpu_test {
namespace {

namespace conf = switchyard::conformance;

constexpr int64_t kArgmaxPoison = -7777;

struct GlobalData {
  std::vector<double> logits;  // [N, V], representable in the logits dtype
  std::vector<int64_t> labels;
  std::vector<double> grad_scale, grad_loss;
  int64_t bad_row = -1, bad_label = 0;
};

GlobalData make_data(const TpCase& c) {
  const int64_t n = c.rows, v = c.vocab;
  Random random(c.name);
  GlobalData d;
  d.logits.resize(static_cast<size_t>(n * v));
  for (double& x : d.logits) x = conf::round_to_dtype(random.uniform(-4.0, 4.0), c.logits_dtype);
  const int64_t boundary = c.split[0];  // first column of rank 1
  if (c.ties) {
    for (int64_t i = 0; i < n; ++i) {
      double* row = d.logits.data() + i * v;
      // Row 0: the tie inside rank 1; other rows: across the ranks (rank 0's id must win),
      // odd rows with a second copy inside rank 1 too.
      const int64_t a = i == 0 ? boundary + 1 : random.integer(0, boundary);
      const int64_t b = random.integer(boundary + (i == 0 ? 2 : 0), v);
      row[a] = row[b] = 6.0;
      if (i % 2 == 1 && b + 1 < v) row[b + 1] = 6.0;
    }
  }
  const bool ignore = (c.flags & SY_CE_IGNORE_INDEX) != 0;
  const bool check = (c.flags & SY_CE_CHECK_LABELS) != 0;
  d.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t label = random.integer(0, v);
    if (i % 5 == 1) label = random.integer(boundary, v);  // owned by rank 1
    if (i % 5 == 2) label = random.integer(0, boundary);  // owned by rank 0
    if (i % 4 == 3 && (ignore || !check)) label = c.ignore_index;
    if (i % 7 == 5 && !check) label = i % 2 != 0 ? -1 : v + i;  // owned by no rank
    d.labels[static_cast<size_t>(i)] = label;
  }
  if (c.bad_label) {
    d.bad_row = std::max<int64_t>(0, n - 2);
    d.bad_label = v + 7919;
    d.labels[static_cast<size_t>(d.bad_row)] = d.bad_label;
  }
  for (int64_t i = 0; i < n; ++i) {
    d.grad_scale.push_back(random.uniform(0.5, 2.0));
    d.grad_loss.push_back(random.uniform(0.5, 2.0));
  }
  return d;
}

std::string describe(const TpCase& c) {
  std::ostringstream d;
  d << "N=" << c.rows << " V=" << c.vocab << " Vp=" << c.split[0] << "+" << c.split[1]
    << " logits=" << short_name(c.logits_dtype) << " grad=" << short_name(c.grad_dtype)
    << " labels=" << (same_dtype(c.label_dtype, kI32) ? "i32" : "i64");
  if (c.label_smoothing != 0)
    d << " alpha=" << c.label_smoothing
      << (c.smoothing == SY_SMOOTHING_PYTORCH ? "(pytorch)" : "(megatron)");
  if ((c.flags & SY_CE_IGNORE_INDEX) != 0) d << " ignore_index=" << c.ignore_index;
  if ((c.flags & SY_CE_ARGMAX) != 0) d << " argmax";
  if ((c.flags & SY_CE_GRAD_IN_FORWARD) != 0)
    d << (c.grad_over_logits ? " grad-in-forward(over logits)" : " grad-in-forward");
  if ((c.flags & SY_CE_CHECK_LABELS) != 0) d << " check-labels";
  if (c.strided) d << " strided";
  if (c.backward_in_place) d << " backward-in-place";
  if (c.ties) d << " ties";
  return d.str();
}

CaseResult run(const TpCase& c, const RankContext& context) {
  const int32_t rank = context.rank;
  const int64_t n = c.rows, v = c.vocab;
  const int64_t vp = c.split[static_cast<size_t>(rank)];
  const int64_t start = rank == 0 ? 0 : c.split[0];
  const bool argmax = (c.flags & SY_CE_ARGMAX) != 0;
  const bool grad_in_forward = (c.flags & SY_CE_GRAD_IN_FORWARD) != 0;
  const GlobalData data = make_data(c);
  const double nan = std::numeric_limits<double>::quiet_NaN();

  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = n;
  p.vocab_local = vp;
  p.vocab_start = start;
  p.vocab_size = v;
  p.logits_dtype = c.logits_dtype;
  p.label_dtype = c.label_dtype;
  p.grad_dtype = c.grad_dtype;
  p.device = DLDevice{kDLCUDA, rank};
  p.tp_size = 2;
  p.label_smoothing = c.label_smoothing;
  p.smoothing = c.smoothing;
  p.ignore_index = c.ignore_index;
  p.flags = c.flags;
  const switchyard::CrossEntropy op = context.runtime->cross_entropy(p);

  Failures failures;
  // What the plugin says one forward of this problem issues (forward_collectives, ABI 1.1);
  // the counted collectives must match it. A tensor-parallel plugin that states nothing fails.
  const int32_t stated_collectives = op.backend().forward_collectives;
  if (stated_collectives < 0)
    failures.add("the plugin states no forward_collectives for this problem (got " +
                 std::to_string(stated_collectives) + "): a tensor-parallel cross entropy must "
                 "say how many collectives its forward issues (sy_cross_entropy."
                 "forward_collectives)");

  // Inputs.
  const int64_t logits_stride = c.strided ? vp + 3 : vp;
  const int64_t grad_stride = c.strided ? vp + 5 : vp;
  GpuTensor logits(c.logits_dtype, n, vp, logits_stride, rank);
  const std::vector<double> local_logits = columns(data.logits, n, v, start, vp);
  logits.fill(local_logits, nan);
  const std::vector<unsigned char> logits_before = logits.bytes();
  GpuTensor labels(c.label_dtype, n, 0, 0, rank);
  labels.fill(std::vector<double>(data.labels.begin(), data.labels.end()), 0);
  GpuTensor loss(kF32, n, 0, 0, rank), lse(kF32, n, 0, 0, rank), argmax_out(kI64, n, 0, 0, rank);
  loss.fill({}, nan);
  lse.fill({}, nan);
  argmax_out.fill({}, kArgmaxPoison);
  GpuTensor grad_scale(kF32, n, 0, 0, rank);
  grad_scale.fill(data.grad_scale, 0);
  GpuTensor forward_grad(c.grad_dtype, n, vp, grad_stride, rank);
  forward_grad.fill({}, nan);
  const int64_t workspace_bytes = op.workspace_size();
  DeviceBuffer workspace(static_cast<size_t>(workspace_bytes));
  workspace.upload(std::vector<unsigned char>(workspace.bytes(), 0xa5));  // stale garbage

  sy_ce_forward_args f = ce_forward_args(p, logits, labels, loss, lse, workspace.data(),
                                         workspace_bytes, context.stream);
  f.argmax = argmax ? argmax_out.dl() : nullptr;
  f.grad_scale = grad_in_forward ? grad_scale.dl() : nullptr;
  f.grad_logits = grad_in_forward ? (c.grad_over_logits ? logits.dl() : forward_grad.dl())
                                  : nullptr;
  f.tp = context.comm->get();

  context.comm->reset();
  if (c.bad_label) {
    // Every rank sees the bad label and refuses before its first collective.
    try {
      op.forward(f);
      cuda_check(cudaStreamSynchronize(context.stream), "cudaStreamSynchronize");
      failures.add("forward accepted label " + std::to_string(data.bad_label) + " in row " +
                   std::to_string(data.bad_row) + " with SY_CE_CHECK_LABELS");
    } catch (const switchyard::Error& e) {
      const std::string expected = "labels[" + std::to_string(data.bad_row) + "] = " +
                                   std::to_string(data.bad_label);
      if (e.status() != SY_ERR_INVALID_ARGUMENT || std::string(e.what()).find(expected) == std::string::npos)
        failures.add(std::string("refused with ") + switchyard::status_name(e.status()) + ": \"" +
                     e.what() + "\"; expected SY_ERR_INVALID_ARGUMENT naming " + expected);
    }
    if (context.comm->collectives() != 0)
      failures.add("issued collectives before refusing: " + context.comm->trace());
    for (const auto* t : {&loss, &lse})
      for (double x : t->values())
        if (!std::isnan(x)) {
          failures.add("wrote " + std::string(t == &loss ? "loss" : "lse") +
                       " although it refused the labels");
          break;
        }
    return failures.empty() ? CaseResult{true, false, describe(c) + " (bad label refused)"}
                            : CaseResult{false, false, failures.text()};
  }

  op.forward(f);
  cuda_check(cudaStreamSynchronize(context.stream), "cudaStreamSynchronize after forward");
  if (stated_collectives >= 0 && context.comm->collectives() != stated_collectives)
    failures.add("forward issued " + std::to_string(context.comm->collectives()) +
                 " collectives (" + context.comm->trace() + "), but the plugin states " +
                 std::to_string(stated_collectives) + " (forward_collectives)");

  // The reference over the global vocabulary.
  conf::CeReferenceProblem rp;
  rp.rows = n;
  rp.vocab = v;
  rp.label_smoothing = static_cast<double>(c.label_smoothing);  // the float the plugin sees
  rp.smoothing = c.smoothing;
  rp.ignore_index = c.ignore_index;
  rp.flags = c.flags;
  const conf::CeReferenceForward ref = conf::reference_ce_forward(
      rp, data.logits, data.labels, grad_in_forward ? &data.grad_scale : nullptr);

  const std::vector<double> got_loss = loss.values(), got_lse = lse.values();
  std::vector<double> loss_scale(ref.loss.size());
  for (size_t i = 0; i < ref.loss.size(); ++i)
    loss_scale[i] = std::max(std::fabs(ref.loss[i]), std::fabs(ref.lse[i]));
  failures.compare("loss", got_loss, ref.loss,
                   conf::statistic_tolerance(c.logits_dtype, max_abs(ref.loss)), 0, &loss_scale);
  failures.compare("lse", got_lse, ref.lse,
                   conf::statistic_tolerance(c.logits_dtype, max_abs(ref.lse)), 0);
  if (argmax) {
    const std::vector<double> got = argmax_out.values();
    for (int64_t i = 0; i < n; ++i)
      if (static_cast<int64_t>(got[i]) != ref.argmax[i]) {
        failures.add("argmax[" + std::to_string(i) + "] got " +
                     std::to_string(static_cast<int64_t>(got[i])) + " expected " +
                     std::to_string(ref.argmax[i]) + " (lowest global id of the maximum)");
        break;
      }
  }
  if (grad_in_forward) {
    const GpuTensor& g = c.grad_over_logits ? logits : forward_grad;
    const auto magnitude = columns(ref.grad_magnitude, n, v, start, vp);
    failures.compare("grad_logits (forward)", g.values(), columns(ref.grad, n, v, start, vp),
                     conf::elementwise_tolerance(c.grad_dtype, max_abs(ref.grad)), vp, &magnitude);
    if (!g.padding_untouched()) failures.add("forward wrote into the padding of grad_logits");
  }
  if (!c.grad_over_logits && logits.bytes() != logits_before)
    failures.add("forward changed the logits (they must survive forward)");

  if (!grad_in_forward) {
    // Backward from the plugin's own lse, as a training step does.
    GpuTensor grad_loss(kF32, n, 0, 0, rank);
    grad_loss.fill(data.grad_loss, 0);
    GpuTensor backward_grad(c.grad_dtype, n, vp, grad_stride, rank);
    backward_grad.fill({}, nan);
    GpuTensor& out = c.backward_in_place ? logits : backward_grad;
    const sy_ce_backward_args b = ce_backward_args(p, logits, labels, lse, grad_loss, out,
                                                   workspace.data(), workspace_bytes,
                                                   context.stream);
    context.comm->reset();
    op.backward(b);
    cuda_check(cudaStreamSynchronize(context.stream), "cudaStreamSynchronize after backward");
    if (context.comm->collectives() != 0)
      failures.add("backward issued collectives: " + context.comm->trace());
    const conf::CeReferenceGradient rg =
        conf::reference_ce_backward(rp, data.logits, data.labels, got_lse, data.grad_loss);
    const auto magnitude = columns(rg.grad_magnitude, n, v, start, vp);
    failures.compare("grad_logits (backward)", out.values(), columns(rg.grad, n, v, start, vp),
                     conf::elementwise_tolerance(c.grad_dtype, max_abs(rg.grad)), vp, &magnitude);
    if (!out.padding_untouched()) failures.add("backward wrote into the padding of grad_logits");
    if (!c.backward_in_place && logits.bytes() != logits_before)
      failures.add("backward changed the logits");
  }
  return failures.empty()
             ? CaseResult{true, false,
                          describe(c) + ", " + std::to_string(stated_collectives) +
                              " collectives per forward as stated"}
             : CaseResult{false, false, failures.text() + " [" + describe(c) + "]"};
}

}  // namespace

std::vector<TpCase> tp_cases() {
  std::vector<TpCase> cases;
  for (const DLDataType dtype : {kF32, kBF16, kF16}) {
    const std::string d = std::string(short_name(dtype)) + "/";
    TpCase base;
    base.logits_dtype = base.grad_dtype = dtype;
    auto add = [&](const std::string& variant, TpCase c) {
      c.name = d + variant;
      cases.push_back(c);
    };
    TpCase c = base;
    add("basic", c);
    c = base;
    c.split = {21, 29};  // rank 1 holds more
    add("basic-rank1-larger", c);
    c = base;
    c.flags = SY_CE_ARGMAX;
    c.ties = true;
    add("argmax-ties", c);
    c = base;
    c.label_smoothing = 0.1f;
    add("smoothing-megatron", c);
    c.smoothing = SY_SMOOTHING_PYTORCH;
    add("smoothing-pytorch", c);
    c = base;
    c.flags = SY_CE_IGNORE_INDEX;
    add("ignore-index", c);
    c.ignore_index = 7;  // a real vocabulary id, owned by rank 0
    add("ignore-index-in-vocab", c);
    c = base;
    c.label_dtype = kI32;
    c.flags = SY_CE_IGNORE_INDEX;
    add("labels-i32", c);
    c = base;
    c.grad_dtype = same_dtype(dtype, kF32) ? kBF16 : kF32;
    add(std::string("grad-") + short_name(c.grad_dtype), c);
    c = base;
    c.strided = true;
    add("strided", c);
    c = base;
    c.flags = SY_CE_GRAD_IN_FORWARD;
    add("grad-in-forward", c);
    c.grad_over_logits = true;
    add("grad-in-forward-over-logits", c);
    c = base;
    c.backward_in_place = true;
    c.strided = true;
    add("backward-in-place-strided", c);
    c = base;
    c.flags = SY_CE_CHECK_LABELS | SY_CE_IGNORE_INDEX;
    add("check-labels-valid", c);
    c.bad_label = true;
    add("check-labels-refusal", c);
    c = base;
    c.flags = SY_CE_ARGMAX | SY_CE_IGNORE_INDEX | SY_CE_GRAD_IN_FORWARD;
    c.label_smoothing = 0.1f;
    c.ties = true;
    c.strided = true;
    add("all-features", c);
    // A real vocabulary, unequally split.
    c = base;
    c.rows = 16;
    c.vocab = 50257;
    c.split = {30000, 20257};
    c.flags = SY_CE_ARGMAX | SY_CE_IGNORE_INDEX;
    c.label_smoothing = 0.1f;
    add("v50257-argmax-smoothing", c);
    c.flags = SY_CE_GRAD_IN_FORWARD | SY_CE_IGNORE_INDEX;
    c.label_smoothing = 0;
    add("v50257-grad-in-forward", c);
  }
  return cases;
}

std::string missing_capability(const TpCase& c, uint32_t features, uint32_t dtypes) {
  std::string missing;
  auto need = [&](bool needed, uint32_t declared, uint32_t bit, const std::string& what) {
    if (needed && (declared & bit) == 0) missing += (missing.empty() ? "" : ", ") + what;
  };
  need(true, features, SY_CE_FEATURE_TENSOR_PARALLEL, "tensor_parallel");
  need(c.label_smoothing != 0, features, SY_CE_FEATURE_LABEL_SMOOTHING, "label_smoothing");
  need((c.flags & SY_CE_IGNORE_INDEX) != 0, features, SY_CE_FEATURE_IGNORE_INDEX, "ignore_index");
  need((c.flags & SY_CE_ARGMAX) != 0, features, SY_CE_FEATURE_ARGMAX, "argmax");
  need((c.flags & SY_CE_GRAD_IN_FORWARD) != 0, features, SY_CE_FEATURE_GRAD_IN_FORWARD,
       "grad_in_forward");
  const auto dtype_bit = [](DLDataType t) {
    return same_dtype(t, kF32) ? SY_DTYPE_F32 : same_dtype(t, kBF16) ? SY_DTYPE_BF16 : SY_DTYPE_F16;
  };
  need(true, dtypes, dtype_bit(c.logits_dtype), std::string("dtype ") + short_name(c.logits_dtype));
  if (!same_dtype(c.grad_dtype, c.logits_dtype))
    need(true, dtypes, dtype_bit(c.grad_dtype), std::string("dtype ") + short_name(c.grad_dtype));
  return missing;
}

CaseResult run_tp_case(const TpCase& c, const RankContext& context) {
  const std::string missing = missing_capability(c, context.features, context.dtypes);
  if (!missing.empty())
    return CaseResult{false, true, "the plugin does not declare " + missing + " [" + describe(c) + "]"};
  try {
    return run(c, context);
  } catch (const switchyard::Error& e) {
    // SY_CE_CHECK_LABELS is a request flag with no capability bit: a backend may refuse it in
    // supports() (te does: reporting the bad row would need a host sync). Both ranks are
    // refused alike at binding, before any collective, so the case is skipped, as the
    // conformance suite does.
    if (e.status() == SY_ERR_UNSUPPORTED && (c.flags & SY_CE_CHECK_LABELS) != 0)
      return CaseResult{false, true, std::string("refused SY_CE_CHECK_LABELS: ") + e.what()};
    return CaseResult{false, false,
                      std::string("unexpected ") + switchyard::status_name(e.status()) + ": " +
                          e.what() + " [" + describe(c) + "]"};
  } catch (const std::exception& e) {
    return CaseResult{false, false,
                      std::string("unexpected exception: ") + e.what() + " [" + describe(c) + "]"};
  }
}

}  // namespace gpu_test
