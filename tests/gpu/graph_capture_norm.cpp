// Norm cases of graph_capture_check: bf16 RMSNorm and LayerNorm [256, 4096] (a transformer's
// hidden size), forward then backward with dγ (and dβ), and again with
// SY_NORM_ACCUMULATE_GRAD_WEIGHT (fp32 dγ/dβ added into, restored before every run); and RMSNorm
// [16384, 4096], whose rows te's forward claims through its workspace.
#include "graph_capture.hpp"
#include "norm_call_args.hpp"

#include <limits>
#include <optional>

namespace gpu_test::graph {
namespace {

constexpr int64_t kRows = 256;
constexpr int64_t kHidden = 4096;

struct NormSpec {
  std::string name;
  sy_norm_kind kind = SY_NORM_RMS;
  bool accumulate = false;
  int64_t rows = kRows;
};

bool layer(const NormSpec& s) { return s.kind == SY_NORM_LAYER; }

void require_declared(const Context& ctx, const NormSpec& s) {
  const uint32_t features = ctx.declared.features;
  if ((ctx.declared.dtypes & SY_DTYPE_BF16) == 0) throw Skip("the norm does not declare bf16");
  if (layer(s) && (features & SY_NORM_FEATURE_LAYER) == 0)
    throw Skip("the norm does not declare SY_NORM_FEATURE_LAYER");
  if (!layer(s) && (features & SY_NORM_FEATURE_RMS) == 0)
    throw Skip("the norm does not declare SY_NORM_FEATURE_RMS");
  if (s.accumulate && (features & SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT) == 0)
    throw Skip("the norm does not declare SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT");
}

std::vector<double> uniform(Random& random, int64_t count, double low, double high) {
  std::vector<double> v(static_cast<size_t>(count));
  for (double& x : v) x = random.uniform(low, high);
  return v;
}

std::string run_case(const Context& ctx, const NormSpec& s) {
  require_declared(ctx, s);
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = s.kind;
  p.rows = s.rows;
  p.hidden = kHidden;
  p.eps = 1e-5f;
  p.x_dtype = kBF16;
  p.y_dtype = kBF16;
  p.weight_dtype = kBF16;
  // Accumulation is into fp32 main grads (norm.h); otherwise dγ/dβ come in the weights' dtype.
  p.grad_weight_dtype = s.accumulate ? kF32 : kBF16;
  p.device = DLDevice{kDLCUDA, 0};
  p.flags = s.accumulate ? SY_NORM_ACCUMULATE_GRAD_WEIGHT : 0u;
  p.sm_margin = 0;
  std::optional<switchyard::Norm> bound;
  try {
    bound.emplace(ctx.runtime->norm(p));
  } catch (const switchyard::Error& e) {
    rethrow_binding(e);
  }
  const switchyard::Norm& op = *bound;
  const double nan = std::numeric_limits<double>::quiet_NaN();

  Random random("graph-norm/" + s.name);
  std::vector<double> x_values = uniform(random, s.rows * kHidden, -3.0, 3.0);
  for (int64_t i = 0; i < s.rows; ++i)  // row offsets: LayerNorm's mean matters
    for (int64_t j = 0; j < kHidden; ++j) x_values[i * kHidden + j] += static_cast<double>(i % 5) - 2.0;
  GpuTensor x(kBF16, s.rows, kHidden, 0, 0), dy(kBF16, s.rows, kHidden, 0, 0);
  x.fill(x_values, nan);
  dy.fill(uniform(random, s.rows * kHidden, -1.0, 1.0), nan);
  GpuTensor gamma(kBF16, kHidden, 0, 0, 0), beta(kBF16, kHidden, 0, 0, 0);
  gamma.fill(uniform(random, kHidden, 0.5, 1.5), 0);
  beta.fill(uniform(random, kHidden, -0.5, 0.5), 0);
  GpuTensor y(kBF16, s.rows, kHidden, 0, 0), dx(kBF16, s.rows, kHidden, 0, 0);
  GpuTensor mean(kF32, s.rows, 0, 0, 0), rstd(kF32, s.rows, 0, 0, 0);
  GpuTensor dgamma(p.grad_weight_dtype, kHidden, 0, 0, 0), dbeta(p.grad_weight_dtype, kHidden, 0, 0, 0);
  if (s.accumulate) {  // the main grads already hold earlier micro-batches' sums
    dgamma.fill(uniform(random, kHidden, -2.0, 2.0), 0);
    dbeta.fill(uniform(random, kHidden, -2.0, 2.0), 0);
  }
  const int64_t bytes = op.workspace_size();
  DeviceBuffer workspace(static_cast<size_t>(bytes));

  std::vector<Output> outputs{{"y", &y}};
  if (layer(s)) outputs.push_back({"mean", &mean});
  outputs.push_back({"rstd", &rstd});
  outputs.push_back({"dx", &dx});
  outputs.push_back({"dgamma", &dgamma, s.accumulate});
  if (layer(s)) outputs.push_back({"dbeta", &dbeta, s.accumulate});

  const Calls calls = [&](cudaStream_t stream) {
    NormCallTensors t;
    t.x = &x;
    t.gamma = &gamma;
    t.beta = layer(s) ? &beta : nullptr;
    t.y = &y;
    t.mean = layer(s) ? &mean : nullptr;
    t.rstd = &rstd;
    t.workspace = workspace.data();
    t.workspace_bytes = bytes;
    op.forward(norm_forward_args(p, t, stream));
    op.backward(norm_backward_args(p, t, dy, dx, &dgamma, layer(s) ? &dbeta : nullptr, stream));
  };
  return "forward + backward: " + eager_versus_graph(ctx.stream, outputs, workspace.data(),
                                                     static_cast<size_t>(bytes), calls);
}

}  // namespace

std::vector<Case> norm_cases() {
  const std::string shape = "bf16-" + std::to_string(kRows) + "x" + std::to_string(kHidden);
  const std::vector<NormSpec> specs{
      {"norm-rms-" + shape, SY_NORM_RMS, false},
      {"norm-rms-" + shape + "-accumulate", SY_NORM_RMS, true},
      {"norm-layer-" + shape, SY_NORM_LAYER, false},
      {"norm-layer-" + shape + "-accumulate", SY_NORM_LAYER, true},
      // More rows than a grid's first ring-full: te's streamed RMS forward claims the rest from
      // a counter zeroed by a kernel it depends on programmatically, captured as such.
      {"norm-rms-bf16-16384x" + std::to_string(kHidden), SY_NORM_RMS, false, 16384},
  };
  std::vector<Case> cases;
  for (const NormSpec& s : specs)
    cases.push_back({s.name, [s](const Context& ctx) { return run_case(ctx, s); }});
  return cases;
}

}  // namespace gpu_test::graph
