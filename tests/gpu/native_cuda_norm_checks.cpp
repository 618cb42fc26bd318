// LayerNorm / RMSNorm / L2Norm on one GPU through the Runtime, against the conformance suite's
// float64 reference: several dgamma/dbeta partial blocks (N > 64), wide rows, memory-efficient
// and in-place calls, replay and batch invariance at size, and an unaligned workspace.
#include "gpu_tensor.hpp"
#include "native_cuda_checks.hpp"

#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_norm.hpp>

#include <cmath>
#include <limits>
#include <sstream>

namespace gpu_test {
namespace {

namespace conf = switchyard::conformance;

struct NormSpec {
  std::string name;
  sy_norm_kind kind = SY_NORM_RMS;
  int64_t rows = 300;
  int64_t hidden = 1000;
  DLDataType x_dtype = kF32, y_dtype = kF32, weight_dtype = kF32, grad_weight_dtype = kF32;
  uint32_t flags = 0;
  bool bias = true;            // LayerNorm only
  bool weight_grads = true;    // pass dweight (and dbias)
  bool in_place = false;       // y over x (forward), dx over dy (backward)
  bool strided = false;
};

struct NormData {
  std::vector<double> x, residual, gamma, beta, dy, d_residual_out, dgamma0, dbeta0;
};

bool layer(const NormSpec& s) { return s.kind == SY_NORM_LAYER; }
bool gamma_of(const NormSpec& s) { return s.kind != SY_NORM_L2; }
bool beta_of(const NormSpec& s) { return layer(s) && s.bias; }
bool has(const NormSpec& s, uint32_t flag) { return (s.flags & flag) != 0; }

NormData make_data(const NormSpec& s) {
  Random random(s.name);
  const int64_t n = s.rows * s.hidden;
  NormData d;
  auto fill = [&](std::vector<double>& v, int64_t count, double low, double high, DLDataType t) {
    v.resize(static_cast<size_t>(count));
    for (double& x : v) x = conf::round_to_dtype(random.uniform(low, high), t);
  };
  fill(d.x, n, -3.0, 3.0, s.x_dtype);
  for (int64_t i = 0; i < s.rows; ++i)  // rows with an offset: LayerNorm's mean matters
    for (int64_t j = 0; j < s.hidden; ++j)
      d.x[i * s.hidden + j] = conf::round_to_dtype(d.x[i * s.hidden + j] + (i % 5) - 2.0, s.x_dtype);
  if (has(s, SY_NORM_RESIDUAL)) fill(d.residual, n, -1.0, 1.0, s.x_dtype);
  // gamma away from 0 so that memory-efficient mode can divide by it.
  if (gamma_of(s)) fill(d.gamma, s.hidden, 0.5, 1.5, s.weight_dtype);
  if (beta_of(s)) fill(d.beta, s.hidden, -0.5, 0.5, s.weight_dtype);
  fill(d.dy, n, -1.0, 1.0, s.y_dtype);
  if (has(s, SY_NORM_RESIDUAL)) fill(d.d_residual_out, n, -0.5, 0.5, s.x_dtype);
  if (has(s, SY_NORM_ACCUMULATE_GRAD_WEIGHT)) {
    fill(d.dgamma0, s.hidden, -2.0, 2.0, kF32);
    fill(d.dbeta0, s.hidden, -2.0, 2.0, kF32);
  }
  return d;
}

struct NormOutputs {
  std::vector<double> y, h, mean, rstd, dx, dgamma, dbeta;
};

// Rows [begin, end) of the spec's data: forward, then backward from what the forward wrote.
NormOutputs run_norm(const NativeContext& ctx, const NormSpec& spec, const NormData& d,
                     int64_t begin, int64_t end, cudaStream_t stream, int64_t misalign = 0) {
  NormSpec s = spec;
  s.rows = end - begin;
  const int64_t n = s.rows, h = s.hidden;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = s.kind;
  p.rows = n;
  p.hidden = h;
  p.eps = 1e-5f;
  p.x_dtype = s.x_dtype;
  p.y_dtype = s.y_dtype;
  p.weight_dtype = s.weight_dtype;
  p.grad_weight_dtype = s.grad_weight_dtype;
  p.device = DLDevice{kDLCUDA, 0};
  p.flags = s.flags;
  const switchyard::Norm op = ctx.runtime->norm(p);
  auto rows_of = [&](const std::vector<double>& v) {
    return std::vector<double>(v.begin() + begin * h, v.begin() + end * h);
  };
  const int64_t stride = s.strided ? h + 5 : 0;
  const bool residual = has(s, SY_NORM_RESIDUAL);
  const bool memory_efficient = has(s, SY_NORM_MEMORY_EFFICIENT);

  GpuTensor x(s.x_dtype, n, h, stride, 0);
  x.fill(rows_of(d.x), nan);
  GpuTensor res(s.x_dtype, n, h, stride, 0), res_out(s.x_dtype, n, h, stride, 0);
  if (residual) res.fill(rows_of(d.residual), nan);
  res_out.fill({}, nan);
  GpuTensor gamma(s.weight_dtype, h, 0, 0, 0), beta(s.weight_dtype, h, 0, 0, 0);
  if (gamma_of(s)) gamma.fill(d.gamma, 0);
  if (beta_of(s)) beta.fill(d.beta, 0);
  GpuTensor y_own(s.y_dtype, n, h, stride, 0);
  y_own.fill({}, nan);
  GpuTensor& y = s.in_place ? x : y_own;  // in place needs y dtype == x dtype
  GpuTensor mean(kF32, n, 0, 0, 0), rstd(kF32, n, 0, 0, 0);
  mean.fill({}, nan);
  rstd.fill({}, nan);
  const int64_t bytes = op.workspace_size();
  DeviceBuffer workspace(static_cast<size_t>(bytes + misalign));
  workspace.upload(std::vector<unsigned char>(workspace.bytes(), 0xc3));
  void* ws = static_cast<char*>(workspace.data()) + misalign;

  sy_norm_forward_args f{};
  f.struct_size = sizeof f;
  f.problem = &p;
  f.x = x.dl();
  f.residual = residual ? res.dl() : nullptr;
  f.weight = gamma_of(s) ? gamma.dl() : nullptr;
  f.bias = beta_of(s) ? beta.dl() : nullptr;
  f.y = y.dl();
  f.residual_out = residual ? res_out.dl() : nullptr;
  f.mean = layer(s) ? mean.dl() : nullptr;
  f.rstd = rstd.dl();
  f.workspace = ws;
  f.workspace_bytes = bytes;
  f.stream = stream;
  op.forward(f);
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize after forward");
  NormOutputs out;
  out.y = y.values();
  out.h = residual ? res_out.values() : std::vector<double>{};
  out.mean = mean.values();
  out.rstd = rstd.values();

  GpuTensor dy_own(s.y_dtype, n, h, stride, 0);
  dy_own.fill(rows_of(d.dy), nan);
  GpuTensor d_res(s.x_dtype, n, h, stride, 0);
  if (residual) d_res.fill(rows_of(d.d_residual_out), nan);
  GpuTensor dx_own(s.x_dtype, n, h, stride, 0);
  dx_own.fill({}, nan);
  GpuTensor& dx = s.in_place ? dy_own : dx_own;  // in place needs x dtype == y dtype
  GpuTensor dgamma(s.grad_weight_dtype, h, 0, 0, 0), dbeta(s.grad_weight_dtype, h, 0, 0, 0);
  const bool accumulate = has(s, SY_NORM_ACCUMULATE_GRAD_WEIGHT);
  dgamma.fill(accumulate ? d.dgamma0 : std::vector<double>{}, nan);
  dbeta.fill(accumulate ? d.dbeta0 : std::vector<double>{}, nan);
  // x_or_y: y (memory-efficient), else h (residual_out), else x (a fresh copy: with in place,
  // the forward wrote y over x).
  GpuTensor x_again(s.x_dtype, n, h, stride, 0);
  x_again.fill(rows_of(d.x), nan);
  GpuTensor& x_or_y = memory_efficient ? y : residual ? res_out : x_again;
  sy_norm_backward_args b{};
  b.struct_size = sizeof b;
  b.problem = &p;
  b.dy = dy_own.dl();
  b.x_or_y = x_or_y.dl();
  b.weight = f.weight;
  b.bias = f.bias;
  b.mean = layer(s) && !memory_efficient ? mean.dl() : nullptr;
  b.rstd = rstd.dl();
  b.d_residual_out = residual ? d_res.dl() : nullptr;
  b.dx = dx.dl();
  b.dweight = s.weight_grads && gamma_of(s) ? dgamma.dl() : nullptr;
  b.dbias = s.weight_grads && beta_of(s) ? dbeta.dl() : nullptr;
  b.workspace = ws;
  b.workspace_bytes = bytes;
  b.stream = stream;
  op.backward(b);
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize after backward");
  out.dx = dx.values();
  if (b.dweight != nullptr) out.dgamma = dgamma.values();
  if (b.dbias != nullptr) out.dbeta = dbeta.values();
  if (!dx.padding_untouched() || !y.padding_untouched())
    throw std::runtime_error("the padding of y or dx was written");
  return out;
}

std::string describe(const NormSpec& s) {
  std::ostringstream d;
  d << (s.kind == SY_NORM_LAYER ? "LayerNorm" : s.kind == SY_NORM_RMS ? "RMSNorm" : "L2Norm")
    << " N=" << s.rows << " H=" << s.hidden << " x=" << short_name(s.x_dtype)
    << " y=" << short_name(s.y_dtype) << " w=" << short_name(s.weight_dtype)
    << " dw=" << short_name(s.grad_weight_dtype);
  if (has(s, SY_NORM_ZERO_CENTERED_GAMMA)) d << " zero-centred";
  if (has(s, SY_NORM_RESIDUAL)) d << " residual";
  if (has(s, SY_NORM_MEMORY_EFFICIENT)) d << " memory-efficient";
  if (has(s, SY_NORM_ACCUMULATE_GRAD_WEIGHT)) d << " accumulate";
  if (s.in_place) d << " in-place";
  if (s.strided) d << " strided";
  return d.str();
}

std::string check_against_reference(const NativeContext& ctx, const NormSpec& s) {
  const NormData d = make_data(s);
  const NormOutputs out = run_norm(ctx, s, d, 0, s.rows, ctx.stream);
  conf::NormReferenceProblem rp;
  rp.kind = s.kind;
  rp.rows = s.rows;
  rp.hidden = s.hidden;
  rp.eps = static_cast<double>(1e-5f);
  rp.flags = s.flags;
  conf::NormReferenceForwardInput fi;
  fi.x = d.x;
  fi.residual = d.residual;
  fi.gamma = d.gamma;
  fi.beta = d.beta;
  const DLDataType x_dtype = s.x_dtype;
  fi.round_to_x_dtype = [x_dtype](double v) { return conf::round_to_dtype(v, x_dtype); };
  const conf::NormReferenceForward rf = conf::reference_norm_forward(rp, fi);

  Failures failures;
  failures.compare("y", out.y, rf.y, conf::elementwise_tolerance(s.y_dtype, max_abs(rf.y)),
                   s.hidden, &rf.y_magnitude);
  if (has(s, SY_NORM_RESIDUAL))
    failures.compare("residual_out", out.h, rf.h,
                     conf::elementwise_tolerance(s.x_dtype, max_abs(rf.h)), s.hidden, &rf.h_magnitude);
  if (layer(s))
    failures.compare("mean", out.mean, rf.mean,
                     conf::statistic_tolerance(s.x_dtype, max_abs(rf.mean)), 0);
  failures.compare("rstd", out.rstd, rf.rstd,
                   conf::statistic_tolerance(s.x_dtype, max_abs(rf.rstd)), 0);

  // Backward from what the plugin's forward wrote (as passed to it).
  conf::NormReferenceBackwardInput bi;
  bi.dy = d.dy;
  bi.x_or_y = has(s, SY_NORM_MEMORY_EFFICIENT) ? out.y : has(s, SY_NORM_RESIDUAL) ? out.h : d.x;
  bi.gamma = d.gamma;
  bi.beta = d.beta;
  bi.mean = out.mean;
  bi.rstd = out.rstd;
  bi.d_residual_out = d.d_residual_out;
  bi.dgamma_initial = d.dgamma0;
  bi.dbeta_initial = d.dbeta0;
  const conf::NormReferenceBackward rb = conf::reference_norm_backward(rp, bi);
  failures.compare("dx", out.dx, rb.dx, conf::elementwise_tolerance(s.x_dtype, max_abs(rb.dx)),
                   s.hidden, &rb.dx_magnitude);
  if (s.weight_grads && gamma_of(s))
    failures.compare("dgamma", out.dgamma, rb.dgamma, conf::row_sum_tolerance(s.x_dtype), 0,
                     &rb.dgamma_scale);
  if (s.weight_grads && beta_of(s))
    failures.compare("dbeta", out.dbeta, rb.dbeta, conf::row_sum_tolerance(s.x_dtype), 0,
                     &rb.dbeta_scale);
  if (!failures.empty()) throw std::runtime_error(failures.text() + " [" + describe(s) + "]");
  return describe(s);
}

NormSpec spec(const std::string& name, sy_norm_kind kind, DLDataType dtype, uint32_t flags,
              int64_t rows = 300, int64_t hidden = 1000) {
  NormSpec s;
  s.name = name;
  s.kind = kind;
  s.rows = rows;
  s.hidden = hidden;
  s.x_dtype = s.y_dtype = s.weight_dtype = s.grad_weight_dtype = dtype;
  s.flags = flags;
  if ((flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0) s.grad_weight_dtype = kF32;
  return s;
}

void same_rows(Failures& f, const std::string& what, const std::vector<double>& full,
               const std::vector<double>& part, int64_t begin, int64_t width) {
  f.same_bits(what, std::vector<double>(full.begin() + begin * width,
                                        full.begin() + begin * width + static_cast<int64_t>(part.size())),
              part);
}

}  // namespace

std::vector<Check> norm_checks() {
  std::vector<Check> checks;
  auto reference = [&](NormSpec s) {
    checks.push_back({"norm/" + s.name, [s](const NativeContext& c) { return check_against_reference(c, s); }});
  };
  constexpr uint32_t kResidual = SY_NORM_RESIDUAL;
  constexpr uint32_t kZero = SY_NORM_ZERO_CENTERED_GAMMA;
  constexpr uint32_t kAccumulate = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  constexpr uint32_t kMemory = SY_NORM_MEMORY_EFFICIENT;
  // N = 300: five dgamma/dbeta partial blocks of 64 rows, the last one partial.
  for (const DLDataType t : {kF32, kBF16}) {
    const std::string d = short_name(t);
    reference(spec("layer-" + d + "-residual-zero-centred-accumulate", SY_NORM_LAYER, t,
                   kResidual | kZero | kAccumulate));
    reference(spec("rms-" + d + "-residual-accumulate", SY_NORM_RMS, t, kResidual | kAccumulate));
    reference(spec("l2-" + d + "-residual", SY_NORM_L2, t, kResidual));
    reference(spec("layer-" + d + "-plain", SY_NORM_LAYER, t, 0));
  }
  NormSpec s = spec("layer-bf16-memory-efficient", SY_NORM_LAYER, kBF16, kMemory, 130, 777);
  reference(s);
  s = spec("rms-f16-memory-efficient-zero-centred-strided", SY_NORM_RMS, kF16, kMemory | kZero, 130, 777);
  s.strided = true;
  reference(s);
  s = spec("layer-bf16-y-f32-weight-f32", SY_NORM_LAYER, kBF16, 0, 200, 640);
  s.y_dtype = s.weight_dtype = s.grad_weight_dtype = kF32;
  reference(s);
  reference(spec("rms-bf16-h16384", SY_NORM_RMS, kBF16, kZero, 8, 16384));
  reference(spec("layer-f32-h1-rows1000", SY_NORM_LAYER, kF32, 0, 1000, 1));
  s = spec("rms-bf16-in-place", SY_NORM_RMS, kBF16, kResidual, 200, 512);
  s.in_place = true;
  reference(s);
  s = spec("layer-f32-in-place-no-bias", SY_NORM_LAYER, kF32, 0, 129, 300);
  s.in_place = true;
  s.bias = false;
  reference(s);
  reference(spec("rows0-accumulate", SY_NORM_RMS, kF32, kAccumulate, 0, 64));

  checks.push_back({"norm/replay-and-batch-invariance", [](const NativeContext& c) {
    NormSpec s = spec("determinism", SY_NORM_LAYER, kBF16, kResidual | kZero, 300, 1000);
    const NormData d = make_data(s);
    const NormOutputs a = run_norm(c, s, d, 0, s.rows, c.stream);
    const NormOutputs b = run_norm(c, s, d, 0, s.rows, nullptr);
    Failures f;
    f.same_bits("replay y", a.y, b.y);
    f.same_bits("replay dx", a.dx, b.dx);
    f.same_bits("replay dgamma", a.dgamma, b.dgamma);
    f.same_bits("replay dbeta", a.dbeta, b.dbeta);
    for (const auto& [begin, end] : {std::pair<int64_t, int64_t>{100, 300}, {0, 1}, {299, 300}}) {
      const NormOutputs part = run_norm(c, s, d, begin, end, c.stream);
      const std::string rows = "rows " + std::to_string(begin) + ".." + std::to_string(end - 1) + " ";
      same_rows(f, rows + "y", a.y, part.y, begin, s.hidden);
      same_rows(f, rows + "residual_out", a.h, part.h, begin, s.hidden);
      same_rows(f, rows + "mean", a.mean, part.mean, begin, 1);
      same_rows(f, rows + "rstd", a.rstd, part.rstd, begin, 1);
      same_rows(f, rows + "dx", a.dx, part.dx, begin, s.hidden);
    }
    if (!f.empty()) throw std::runtime_error(f.text());
    return describe(s) + " (replay bit-identical, dgamma/dbeta included; rows alone and in "
                         "sub-batches bit-identical)";
  }});
  checks.push_back({"norm/unaligned-workspace", [](const NativeContext& c) {
    NormSpec s = spec("unaligned", SY_NORM_LAYER, kF32, kAccumulate, 150, 333);
    const NormData d = make_data(s);
    const NormOutputs aligned = run_norm(c, s, d, 0, s.rows, c.stream, 0);
    Failures f;
    for (int64_t misalign : {8, 136}) {
      const NormOutputs shifted = run_norm(c, s, d, 0, s.rows, c.stream, misalign);
      f.same_bits("dgamma at +" + std::to_string(misalign), aligned.dgamma, shifted.dgamma);
      f.same_bits("dbeta at +" + std::to_string(misalign), aligned.dbeta, shifted.dbeta);
    }
    if (!f.empty()) throw std::runtime_error(f.text());
    return describe(s) + " (workspace at +8 and +136 bytes: same bits)";
  }});
  return checks;
}

}  // namespace gpu_test
