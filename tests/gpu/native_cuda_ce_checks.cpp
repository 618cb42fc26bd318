// Cross entropy on one GPU through the Runtime, against the conformance suite's float64
// reference: sizes the conformance cases do not reach, streams, replay, batch invariance and
// an unaligned workspace.
#include "ce_call_args.hpp"
#include "gpu_tensor.hpp"
#include "native_cuda_checks.hpp"

#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_ce.hpp>

#include <cmath>
#include <limits>
#include <sstream>

namespace gpu_test {
namespace {

namespace conf = switchyard::conformance;

struct CeSpec {
  std::string name;
  int64_t rows = 7;
  int64_t vocab = 50;
  DLDataType logits_dtype = kF32;
  DLDataType grad_dtype = kF32;
  DLDataType label_dtype = kI64;
  float label_smoothing = 0;
  sy_smoothing smoothing = SY_SMOOTHING_MEGATRON;
  uint32_t flags = 0;
  bool strided = false;
};

struct CeData {
  std::vector<double> logits;
  std::vector<int64_t> labels;
  std::vector<double> grad_scale, grad_loss;
};

CeData make_data(const CeSpec& s) {
  Random random(s.name);
  CeData d;
  d.logits.resize(static_cast<size_t>(s.rows * s.vocab));
  for (double& x : d.logits) x = conf::round_to_dtype(random.uniform(-5.0, 5.0), s.logits_dtype);
  for (int64_t i = 0; i < s.rows; ++i) {
    int64_t label = random.integer(0, s.vocab);
    if ((s.flags & SY_CE_IGNORE_INDEX) != 0 && i % 6 == 4) label = -100;
    if ((s.flags & SY_CE_CHECK_LABELS) == 0 && i % 9 == 7) label = s.vocab + i;  // owned by none
    d.labels.push_back(label);
    d.grad_scale.push_back(random.uniform(0.5, 2.0));
    d.grad_loss.push_back(random.uniform(0.5, 2.0));
  }
  // A tie for the maximum in row 0 (lowest id wins).
  if (s.vocab >= 4 && s.rows > 0) {
    d.logits[1] = 9.0;
    d.logits[static_cast<size_t>(s.vocab - 2)] = 9.0;
  }
  return d;
}

sy_ce_problem problem_of(const CeSpec& s) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = s.rows;
  p.vocab_local = s.vocab;
  p.vocab_start = 0;
  p.vocab_size = s.vocab;
  p.logits_dtype = s.logits_dtype;
  p.label_dtype = s.label_dtype;
  p.grad_dtype = s.grad_dtype;
  p.device = DLDevice{kDLCUDA, 0};
  p.tp_size = 1;
  p.label_smoothing = s.label_smoothing;
  p.smoothing = s.smoothing;
  p.ignore_index = -100;
  p.flags = s.flags;
  return p;
}

struct CeOutputs {
  std::vector<double> loss, lse, argmax, grad;
};

// Forward (and backward from the plugin's lse unless the gradient came with the forward) of
// rows [begin, end) of the spec's data, on `stream`, with the workspace pointer `misalign`
// bytes past an allocation.
CeOutputs run_ce(const NativeContext& ctx, const CeSpec& spec, const CeData& data, int64_t begin,
                 int64_t end, cudaStream_t stream, int64_t misalign = 0) {
  CeSpec s = spec;
  s.rows = end - begin;
  const sy_ce_problem p = problem_of(s);
  const switchyard::CrossEntropy op = ctx.runtime->cross_entropy(p);
  const int64_t n = s.rows, v = s.vocab;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool gif = (s.flags & SY_CE_GRAD_IN_FORWARD) != 0;
  const bool argmax = (s.flags & SY_CE_ARGMAX) != 0;

  GpuTensor logits(s.logits_dtype, n, v, s.strided ? v + 7 : 0, 0);
  logits.fill(std::vector<double>(data.logits.begin() + begin * v, data.logits.begin() + end * v),
              nan);
  GpuTensor labels(s.label_dtype, n, 0, 0, 0);
  labels.fill(std::vector<double>(data.labels.begin() + begin, data.labels.begin() + end), 0);
  GpuTensor loss(kF32, n, 0, 0, 0), lse(kF32, n, 0, 0, 0), arg(kI64, n, 0, 0, 0);
  loss.fill({}, nan);
  lse.fill({}, nan);
  arg.fill({}, -1);
  GpuTensor scale(kF32, n, 0, 0, 0), grad_loss(kF32, n, 0, 0, 0);
  scale.fill(std::vector<double>(data.grad_scale.begin() + begin, data.grad_scale.begin() + end), 0);
  grad_loss.fill(std::vector<double>(data.grad_loss.begin() + begin, data.grad_loss.begin() + end), 0);
  GpuTensor grad(s.grad_dtype, n, v, s.strided ? v + 3 : 0, 0);
  grad.fill({}, nan);
  const int64_t bytes = op.workspace_size();
  DeviceBuffer workspace(static_cast<size_t>(bytes + misalign));
  workspace.upload(std::vector<unsigned char>(workspace.bytes(), 0x5a));

  void* const workspace_at = static_cast<char*>(workspace.data()) + misalign;
  sy_ce_forward_args f = ce_forward_args(p, logits, labels, loss, lse, workspace_at, bytes, stream);
  f.argmax = argmax ? arg.dl() : nullptr;
  f.grad_scale = gif ? scale.dl() : nullptr;
  f.grad_logits = gif ? grad.dl() : nullptr;
  op.forward(f);
  if (!gif)
    op.backward(
        ce_backward_args(p, logits, labels, lse, grad_loss, grad, workspace_at, bytes, stream));
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (!grad.padding_untouched()) throw std::runtime_error("the padding of grad_logits was written");
  return CeOutputs{loss.values(), lse.values(), argmax ? arg.values() : std::vector<double>{},
                   grad.values()};
}

std::string describe(const CeSpec& s) {
  std::ostringstream d;
  d << "N=" << s.rows << " V=" << s.vocab << " logits=" << short_name(s.logits_dtype)
    << " grad=" << short_name(s.grad_dtype) << " labels=" << short_name(s.label_dtype);
  if (s.label_smoothing != 0)
    d << " alpha=" << s.label_smoothing << (s.smoothing == SY_SMOOTHING_PYTORCH ? "(pytorch)" : "(megatron)");
  if ((s.flags & SY_CE_IGNORE_INDEX) != 0) d << " ignore_index";
  if ((s.flags & SY_CE_ARGMAX) != 0) d << " argmax";
  if ((s.flags & SY_CE_GRAD_IN_FORWARD) != 0) d << " grad-in-forward";
  if (s.strided) d << " strided";
  return d.str();
}

std::string check_against_reference(const NativeContext& ctx, const CeSpec& s) {
  const CeData data = make_data(s);
  const CeOutputs out = run_ce(ctx, s, data, 0, s.rows, ctx.stream);
  conf::CeReferenceProblem rp;
  rp.rows = s.rows;
  rp.vocab = s.vocab;
  rp.label_smoothing = static_cast<double>(s.label_smoothing);
  rp.smoothing = s.smoothing;
  rp.ignore_index = -100;
  rp.flags = s.flags;
  const bool gif = (s.flags & SY_CE_GRAD_IN_FORWARD) != 0;
  const conf::CeReferenceForward ref =
      conf::reference_ce_forward(rp, data.logits, data.labels, gif ? &data.grad_scale : nullptr);
  Failures failures;
  std::vector<double> loss_scale(ref.loss.size());
  for (size_t i = 0; i < ref.loss.size(); ++i)
    loss_scale[i] = std::max(std::fabs(ref.loss[i]), std::fabs(ref.lse[i]));
  failures.compare("loss", out.loss, ref.loss,
                   conf::statistic_tolerance(s.logits_dtype, max_abs(ref.loss)), 0, &loss_scale);
  failures.compare("lse", out.lse, ref.lse,
                   conf::statistic_tolerance(s.logits_dtype, max_abs(ref.lse)), 0);
  if ((s.flags & SY_CE_ARGMAX) != 0)
    for (int64_t i = 0; i < s.rows; ++i)
      if (static_cast<int64_t>(out.argmax[i]) != ref.argmax[i]) {
        failures.add("argmax[" + std::to_string(i) + "] got " +
                     std::to_string(static_cast<int64_t>(out.argmax[i])) + " expected " +
                     std::to_string(ref.argmax[i]));
        break;
      }
  if (gif) {
    failures.compare("grad_logits (forward)", out.grad, ref.grad,
                     conf::elementwise_tolerance(s.grad_dtype, max_abs(ref.grad)), s.vocab,
                     &ref.grad_magnitude);
  } else {
    const conf::CeReferenceGradient rg =
        conf::reference_ce_backward(rp, data.logits, data.labels, out.lse, data.grad_loss);
    failures.compare("grad_logits (backward)", out.grad, rg.grad,
                     conf::elementwise_tolerance(s.grad_dtype, max_abs(rg.grad)), s.vocab,
                     &rg.grad_magnitude);
  }
  if (!failures.empty()) throw std::runtime_error(failures.text() + " [" + describe(s) + "]");
  return describe(s);
}

void same_outputs(Failures& failures, const std::string& what, const CeOutputs& a,
                  const CeOutputs& b, int64_t offset_rows, int64_t vocab) {
  const auto slice = [&](const std::vector<double>& v, int64_t width, int64_t count) {
    return std::vector<double>(v.begin() + offset_rows * width,
                               v.begin() + (offset_rows + count) * width);
  };
  const int64_t rows = static_cast<int64_t>(b.loss.size());
  failures.same_bits(what + " loss", slice(a.loss, 1, rows), b.loss);
  failures.same_bits(what + " lse", slice(a.lse, 1, rows), b.lse);
  if (!a.argmax.empty()) failures.same_bits(what + " argmax", slice(a.argmax, 1, rows), b.argmax);
  failures.same_bits(what + " grad_logits", slice(a.grad, vocab, rows), b.grad);
}

CeSpec spec(const std::string& name, int64_t rows, int64_t vocab, DLDataType dtype,
            uint32_t flags = 0) {
  CeSpec s;
  s.name = name;
  s.rows = rows;
  s.vocab = vocab;
  s.logits_dtype = s.grad_dtype = dtype;
  s.flags = flags;
  return s;
}

}  // namespace

std::vector<Check> ce_checks() {
  std::vector<Check> checks;
  auto reference = [&](CeSpec s) {
    checks.push_back({"ce/" + s.name, [s](const NativeContext& c) { return check_against_reference(c, s); }});
  };
  // More rows than a grid's y dimension (65535): the element kernels loop.
  reference(spec("rows70000-f32-argmax", 70000, 8, kF32, SY_CE_ARGMAX | SY_CE_IGNORE_INDEX));
  reference(spec("rows70000-bf16-grad-in-forward", 70000, 8, kBF16, SY_CE_GRAD_IN_FORWARD));
  // Vocabularies of today's models, one block per row.
  CeSpec s = spec("v131072-bf16-all", 6, 131072, kBF16, SY_CE_ARGMAX | SY_CE_IGNORE_INDEX);
  s.label_smoothing = 0.1f;
  s.smoothing = SY_SMOOTHING_PYTORCH;
  reference(s);
  s = spec("v131072-bf16-grad-in-forward-f32-grad", 6, 131072, kBF16, SY_CE_GRAD_IN_FORWARD);
  s.grad_dtype = kF32;
  s.label_smoothing = 0.1f;
  reference(s);
  s = spec("v262144-f16-strided-i32", 3, 262144, kF16, SY_CE_ARGMAX);
  s.strided = true;
  s.label_dtype = kI32;
  reference(s);
  reference(spec("v50257-f32-check-labels", 64, 50257, kF32, SY_CE_CHECK_LABELS | SY_CE_IGNORE_INDEX));
  reference(spec("rows0", 0, 50, kBF16, SY_CE_ARGMAX));

  checks.push_back({"ce/streams-and-replay", [](const NativeContext& c) {
    CeSpec s = spec("streams", 33, 5003, kBF16, SY_CE_ARGMAX | SY_CE_IGNORE_INDEX);
    s.label_smoothing = 0.1f;
    const CeData data = make_data(s);
    const CeOutputs on_stream = run_ce(c, s, data, 0, s.rows, c.stream);
    const CeOutputs on_null = run_ce(c, s, data, 0, s.rows, nullptr);
    const CeOutputs again = run_ce(c, s, data, 0, s.rows, c.stream);
    Failures f;
    same_outputs(f, "null stream vs stream:", on_stream, on_null, 0, s.vocab);
    same_outputs(f, "two runs:", on_stream, again, 0, s.vocab);
    if (!f.empty()) throw std::runtime_error(f.text());
    return describe(s) + " (null stream, a non-blocking stream and a replay bit-identical)";
  }});
  checks.push_back({"ce/batch-invariance", [](const NativeContext& c) {
    CeSpec s = spec("batch", 1000, 3001, kBF16, SY_CE_ARGMAX | SY_CE_IGNORE_INDEX | SY_CE_GRAD_IN_FORWARD);
    s.label_smoothing = 0.1f;
    const CeData data = make_data(s);
    const CeOutputs full = run_ce(c, s, data, 0, s.rows, c.stream);
    Failures f;
    for (const auto& [begin, end] : {std::pair<int64_t, int64_t>{500, 1000}, {0, 1}, {777, 778}}) {
      const CeOutputs part = run_ce(c, s, data, begin, end, c.stream);
      same_outputs(f, "rows " + std::to_string(begin) + ".." + std::to_string(end - 1) + ":",
                   full, part, begin, s.vocab);
    }
    if (!f.empty()) throw std::runtime_error(f.text());
    return describe(s) + " (rows alone and in sub-batches bit-identical)";
  }});
  checks.push_back({"ce/unaligned-workspace", [](const NativeContext& c) {
    CeSpec s = spec("unaligned", 17, 1001, kF16, SY_CE_ARGMAX);
    s.label_smoothing = 0.05f;
    const CeData data = make_data(s);
    const CeOutputs aligned = run_ce(c, s, data, 0, s.rows, c.stream, 0);
    Failures f;
    for (int64_t misalign : {8, 72, 200}) {
      const CeOutputs shifted = run_ce(c, s, data, 0, s.rows, c.stream, misalign);
      same_outputs(f, "workspace + " + std::to_string(misalign) + " bytes:", aligned, shifted, 0, s.vocab);
    }
    if (!f.empty()) throw std::runtime_error(f.text());
    return describe(s) + " (workspace at +8, +72, +200 bytes: same bits)";
  }});
  checks.push_back({"ce/check-labels-refusal-on-stream", [](const NativeContext& c) {
    CeSpec s = spec("bad-label", 40, 300, kBF16, SY_CE_CHECK_LABELS);
    CeData data = make_data(s);
    data.labels[29] = 300 + 11;
    data.labels[33] = -5;
    try {
      run_ce(c, s, data, 0, s.rows, c.stream);
    } catch (const switchyard::Error& e) {
      const std::string m = e.what();
      if (e.status() != SY_ERR_INVALID_ARGUMENT || m.find("labels[29] = 311") == std::string::npos)
        throw std::runtime_error(std::string("refused with ") + switchyard::status_name(e.status()) +
                                 ": " + m + "; expected INVALID_ARGUMENT naming labels[29] = 311 "
                                 "(the lowest bad row)");
      return "refused: " + m;
    }
    throw std::runtime_error("labels 311 and -5 (vocabulary 300) were accepted with SY_CE_CHECK_LABELS");
  }});
  return checks;
}

}  // namespace gpu_test
