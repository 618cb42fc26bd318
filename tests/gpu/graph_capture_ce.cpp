// Cross-entropy cases of graph_capture_check: bf16 logits [64, 50 257] (GPT-2's vocabulary,
// not a multiple of any vector width) with per-token upstream gradients: forward then
// backward; gradient in forward; argmax. Then gradient in forward on [1024, 50 304] (the
// vocabulary padded to 64, 16-byte rows: what te's persistent kernel takes, more rows than its
// clusters, so each claims several from a counter the captured graph must zero every launch).
// tp_size = 1 only (TP > 1 would capture NCCL).
#include "ce_call_args.hpp"
#include "graph_capture.hpp"

#include <limits>
#include <optional>

namespace gpu_test::graph {
namespace {

constexpr int64_t kRows = 64;
constexpr int64_t kVocab = 50257;

struct CeSpec {
  std::string name;
  uint32_t flags = 0;          // SY_CE_GRAD_IN_FORWARD, SY_CE_ARGMAX
  uint32_t feature = 0;        // the SY_CE_FEATURE_* the flags need
  const char* feature_name = nullptr;
  int64_t rows = kRows;
  int64_t vocab = kVocab;
};

sy_ce_problem problem_of(const CeSpec& s) {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = s.rows;
  p.vocab_local = s.vocab;
  p.vocab_start = 0;
  p.vocab_size = s.vocab;
  p.logits_dtype = kBF16;
  p.label_dtype = kI64;
  p.grad_dtype = kBF16;
  p.device = DLDevice{kDLCUDA, 0};
  p.tp_size = 1;
  p.label_smoothing = 0;
  p.smoothing = SY_SMOOTHING_MEGATRON;
  p.ignore_index = -100;
  p.flags = s.flags;
  return p;
}

std::string run_case(const Context& ctx, const CeSpec& s) {
  if ((ctx.declared.dtypes & SY_DTYPE_BF16) == 0)
    throw Skip("the cross entropy does not declare bf16 logits");
  if (s.feature != 0 && (ctx.declared.features & s.feature) == 0)
    throw Skip(std::string("the cross entropy does not declare ") + s.feature_name);
  const sy_ce_problem p = problem_of(s);
  std::optional<switchyard::CrossEntropy> bound;
  try {
    bound.emplace(ctx.runtime->cross_entropy(p));
  } catch (const switchyard::Error& e) {
    rethrow_binding(e);
  }
  const switchyard::CrossEntropy& op = *bound;
  const bool gif = (s.flags & SY_CE_GRAD_IN_FORWARD) != 0;
  const bool argmax = (s.flags & SY_CE_ARGMAX) != 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();

  Random random("graph-ce/" + s.name);
  std::vector<double> logit_values(static_cast<size_t>(s.rows * s.vocab));
  for (double& x : logit_values) x = random.uniform(-5.0, 5.0);
  std::vector<double> label_values, scale_values;
  for (int64_t i = 0; i < s.rows; ++i) {
    label_values.push_back(static_cast<double>(random.integer(0, s.vocab)));
    scale_values.push_back(random.uniform(0.5, 2.0));  // per token, like loss_mask / tokens
  }
  GpuTensor logits(kBF16, s.rows, s.vocab, 0, 0), labels(kI64, s.rows, 0, 0, 0);
  logits.fill(logit_values, nan);
  labels.fill(label_values, 0);
  GpuTensor per_token(kF32, s.rows, 0, 0, 0);  // grad_loss, or grad_scale with gif
  per_token.fill(scale_values, 0);
  GpuTensor loss(kF32, s.rows, 0, 0, 0), lse(kF32, s.rows, 0, 0, 0), arg(kI64, s.rows, 0, 0, 0);
  GpuTensor grad(kBF16, s.rows, s.vocab, 0, 0);
  const int64_t bytes = op.workspace_size();
  DeviceBuffer workspace(static_cast<size_t>(bytes));

  std::vector<Output> outputs{{"loss", &loss}, {"lse", &lse}};
  if (argmax) outputs.push_back({"argmax", &arg});
  outputs.push_back({"grad_logits", &grad});

  const Calls calls = [&](cudaStream_t stream) {
    sy_ce_forward_args f =
        ce_forward_args(p, logits, labels, loss, lse, workspace.data(), bytes, stream);
    f.argmax = argmax ? arg.dl() : nullptr;
    f.grad_scale = gif ? per_token.dl() : nullptr;
    f.grad_logits = gif ? grad.dl() : nullptr;
    op.forward(f);
    if (gif) return;  // the gradient came with the forward; no backward
    op.backward(
        ce_backward_args(p, logits, labels, lse, per_token, grad, workspace.data(), bytes, stream));
  };
  return std::string(gif ? "forward with gradient" : "forward + backward") + ": " +
         eager_versus_graph(ctx.stream, outputs, workspace.data(), static_cast<size_t>(bytes),
                            calls);
}

}  // namespace

std::vector<Case> cross_entropy_cases() {
  const std::string shape = "bf16-" + std::to_string(kRows) + "x" + std::to_string(kVocab);
  const std::vector<CeSpec> specs{
      {"ce-" + shape},
      {"ce-" + shape + "-grad-in-forward", SY_CE_GRAD_IN_FORWARD, SY_CE_FEATURE_GRAD_IN_FORWARD,
       "SY_CE_FEATURE_GRAD_IN_FORWARD"},
      {"ce-" + shape + "-argmax", SY_CE_ARGMAX, SY_CE_FEATURE_ARGMAX, "SY_CE_FEATURE_ARGMAX"},
      {"ce-bf16-1024x50304-grad-in-forward", SY_CE_GRAD_IN_FORWARD, SY_CE_FEATURE_GRAD_IN_FORWARD,
       "SY_CE_FEATURE_GRAD_IN_FORWARD", 1024, 50304},
  };
  std::vector<Case> cases;
  for (const CeSpec& s : specs)
    cases.push_back({s.name, [s](const Context& ctx) { return run_case(ctx, s); }});
  return cases;
}

}  // namespace gpu_test::graph
