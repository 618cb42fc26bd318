// norm_paths_check: te's norm promises (plugins/te/README.md, "Determinism, batch invariance and
// sm_margin") that y, mean, rstd, dx, dweight and dbias are the same bits whatever sm_margin is and
// whether the rows are streamed (16-byte aligned) or read by the general kernels: its backward
// writes dgamma/dbeta partials per fixed chunk of rows (ChunkRows, norm_plan.hpp), which a block
// takes alone when the grid holds every chunk's block at once (sm_margin 0 on an H200) and two or
// more otherwise. Each case runs forward + backward four ways (sm_margin 0, 8 and 100 on compact
// rows, and sm_margin 0 on rows of hidden + 1 elements: not 16-byte aligned, so the general
// kernels), with every output poisoned (NaN) and the workspace too, and compares every output of
// every way bit for bit with the first. For te a fifth way gives the forward no workspace: its
// RMS/L2 forward then takes its rows by stride instead of claiming them from a counter there
// (plugins/te/README.md, "Kernels"), which must not change a bit either. The first way is also checked against the conformance
// suite's float64 reference (every row's mean and rstd, dweight/dbias over every row, y and dx of
// sampled rows), so that ways agreeing on garbage cannot pass.
// One line per case ("PASS|FAIL|SKIP norm-paths-<plugin>/<case>  detail"), then
// "N passed, M failed, K skipped". Exit 0 when nothing failed, 77 without a GPU, 1 otherwise.
//
//   norm_paths_check [--plugin NAME]        (default: te)
#include "gpu_tensor.hpp"
#include "norm_call_args.hpp"
#include "plugin_check_start.hpp"

#include <switchyard/conformance/reference_norm.hpp>
#include <switchyard/switchyard.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace conf = switchyard::conformance;
using gpu_test::cuda_check;
using gpu_test::DeviceBuffer;
using gpu_test::GpuTensor;
using gpu_test::kBF16;
using gpu_test::kF16;
using gpu_test::kF32;
using gpu_test::same_dtype;

constexpr float kEps = 1e-5f;

struct Spec {
  std::string name;
  sy_norm_kind kind;
  DLDataType dtype;  // x, y, gamma, beta (and dweight/dbias unless accumulated into fp32)
  int64_t rows, hidden;
  uint32_t flags;  // SY_NORM_ZERO_CENTERED_GAMMA, SY_NORM_ACCUMULATE_GRAD_WEIGHT, SY_NORM_RESIDUAL
};

bool layer(const Spec& s) { return s.kind == SY_NORM_LAYER; }
bool weighted(const Spec& s) { return s.kind != SY_NORM_L2; }  // L2Norm has no gamma
bool accumulate(const Spec& s) { return (s.flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0; }
bool residual(const Spec& s) { return (s.flags & SY_NORM_RESIDUAL) != 0; }

struct Way {
  std::string name;
  int32_t sm_margin;
  bool unaligned;                 // rows hidden + 1 elements apart (every [N, H] tensor)
  bool forward_workspace = true;  // false: the forward gets none (NULL, 0 bytes)
};

sy_norm_problem problem_of(const Spec& s, int32_t sm_margin) {
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = s.kind;
  p.rows = s.rows;
  p.hidden = s.hidden;
  p.eps = kEps;
  p.x_dtype = p.y_dtype = p.weight_dtype = s.dtype;
  p.grad_weight_dtype = accumulate(s) ? kF32 : s.dtype;  // accumulation is into fp32 (norm.h)
  p.device = DLDevice{kDLCUDA, 0};
  p.flags = s.flags;
  p.sm_margin = sm_margin;
  return p;
}

// Inputs as stored in their dtypes, so that the reference sees what the kernels see.
struct Inputs {
  std::vector<double> x, dy, residual, d_residual_out, gamma, beta, dweight_start, dbias_start;
};

// offset ± [low, high), rounded to dtype: never zero.
std::vector<double> random_values(gpu_test::Random& random, int64_t count, double offset,
                                  double low, double high, DLDataType dtype) {
  std::vector<double> v(static_cast<size_t>(count));
  for (double& x : v) {
    const double u = random.uniform(-1.0, 1.0);
    x = conf::round_to_dtype(offset + std::copysign(low + (high - low) * std::fabs(u), u), dtype);
  }
  return v;
}

Inputs inputs_of(const Spec& s) {
  gpu_test::Random random("norm-paths/" + s.name);
  Inputs in;
  const int64_t h = s.hidden;
  in.x.reserve(static_cast<size_t>(s.rows * h));
  for (int64_t i = 0; i < s.rows; ++i) {  // every third row a large mean, which LayerNorm removes
    const std::vector<double> row =
        random_values(random, h, i % 3 == 2 ? 3.0 : 0.0, 0.05, 2.0, s.dtype);
    in.x.insert(in.x.end(), row.begin(), row.end());
  }
  in.dy = random_values(random, s.rows * h, 0.0, 0.05, 1.0, s.dtype);
  const bool zero_centred = (s.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0;
  if (residual(s)) {
    in.residual = random_values(random, s.rows * h, 0.0, 0.05, 1.0, s.dtype);
    in.d_residual_out = random_values(random, s.rows * h, 0.0, 0.05, 1.0, s.dtype);
  }
  if (weighted(s)) in.gamma = random_values(random, h, zero_centred ? 0.0 : 1.0, 0.05, 0.5, s.dtype);
  if (layer(s)) in.beta = random_values(random, h, 0.0, 0.05, 0.5, s.dtype);
  if (accumulate(s)) {  // the main grads already hold earlier micro-batches' sums
    in.dweight_start = random_values(random, h, 0.0, 0.05, 2.0, kF32);
    if (layer(s)) in.dbias_start = random_values(random, h, 0.0, 0.05, 2.0, kF32);
  }
  return in;
}

// Every byte of the tensor's memory, row padding included, 0xFF (NaN in every float dtype).
void poison(GpuTensor& t, cudaStream_t stream) {
  const DLTensor& d = *t.dl();
  const int64_t row = d.ndim == 1 ? 1 : d.strides != nullptr ? d.strides[0] : d.shape[1];
  cuda_check(cudaMemsetAsync(d.data, 0xFF, static_cast<size_t>(d.shape[0] * row * d.dtype.bits / 8),
                             stream),
             "cudaMemsetAsync (poison)");
}

// An [N, H] input on the GPU, uploaded once a case: compact rows, and a copy whose rows are
// hidden + 1 elements apart (not 16-byte aligned: te's general kernels), its padding NaN.
struct DeviceRows {
  GpuTensor compact, unaligned;

  DeviceRows(const Spec& s, const std::vector<double>& values, cudaStream_t stream)
      : compact(s.dtype, s.rows, s.hidden, 0, 0),
        unaligned(s.dtype, s.rows, s.hidden, s.hidden + 1, 0) {
    compact.fill(values, std::numeric_limits<double>::quiet_NaN());
    poison(unaligned, stream);
    const size_t row = static_cast<size_t>(s.hidden * s.dtype.bits / 8);
    cuda_check(cudaMemcpy2DAsync(unaligned.dl()->data, row + s.dtype.bits / 8, compact.dl()->data,
                                 row, row, static_cast<size_t>(s.rows), cudaMemcpyDeviceToDevice,
                                 stream),
               "cudaMemcpy2DAsync (unaligned rows)");
  }
  GpuTensor& of(const Way& w) { return w.unaligned ? unaligned : compact; }
};

struct DeviceInputs {
  DeviceRows x, dy;
  std::optional<DeviceRows> residual_in, d_residual_out;  // SY_NORM_RESIDUAL's
  GpuTensor gamma, beta;

  DeviceInputs(const Spec& s, const Inputs& in, cudaStream_t stream)
      : x(s, in.x, stream),
        dy(s, in.dy, stream),
        gamma(s.dtype, s.hidden, 0, 0, 0),
        beta(s.dtype, s.hidden, 0, 0, 0) {
    if (residual(s)) {
      residual_in.emplace(s, in.residual, stream);
      d_residual_out.emplace(s, in.d_residual_out, stream);
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    gamma.fill(in.gamma, nan);  // unused (NaN) for L2Norm
    beta.fill(in.beta, nan);    // LayerNorm's; unused (NaN) for RMSNorm and L2Norm
    cuda_check(cudaStreamSynchronize(stream), "copying the unaligned inputs");
  }
};

// The outputs of one way: y and dx as stored (bytes, row padding included), the rest as values
// (exact in a double).
struct Outputs {
  std::vector<unsigned char> y, dx, residual_out;
  int64_t row_stride = 0;  // of y, dx and residual_out, in elements
  // The first way's only (against the reference).
  std::vector<double> y_values, dx_values, residual_out_values;
  std::vector<double> mean, rstd, dweight, dbias;
  bool padding_untouched = true;  // y's, dx's and residual_out's row padding still NaN
};

Outputs run_way(const switchyard::Runtime& runtime, const Spec& s, const Inputs& in,
                DeviceInputs& d, const Way& w, bool first, cudaStream_t stream) {
  const sy_norm_problem p = problem_of(s, w.sm_margin);
  const switchyard::Norm op = runtime.norm(p);
  const int64_t stride = w.unaligned ? s.hidden + 1 : 0;
  GpuTensor y(s.dtype, s.rows, s.hidden, stride, 0), dx(s.dtype, s.rows, s.hidden, stride, 0);
  // h = x + residual, the backward's x_or_y (the case's residual_out; else x itself)
  std::optional<GpuTensor> h;
  if (residual(s)) h.emplace(s.dtype, s.rows, s.hidden, stride, 0);
  GpuTensor mean(kF32, s.rows, 0, 0, 0), rstd(kF32, s.rows, 0, 0, 0);
  GpuTensor dweight(p.grad_weight_dtype, s.hidden, 0, 0, 0),
      dbias(p.grad_weight_dtype, s.hidden, 0, 0, 0);
  if (accumulate(s)) {  // the same non-zero start for every way, not poisoned
    dweight.fill(in.dweight_start, 0);
    if (layer(s)) dbias.fill(in.dbias_start, 0);
  }
  const int64_t bytes = op.workspace_size();
  DeviceBuffer workspace(static_cast<size_t>(bytes));
  for (GpuTensor* t : {&y, &dx, &mean, &rstd}) poison(*t, stream);
  if (h) poison(*h, stream);
  if (!accumulate(s))
    for (GpuTensor* t : {&dweight, &dbias}) poison(*t, stream);
  // Partials nobody wrote would read as NaN.
  cuda_check(cudaMemsetAsync(workspace.data(), 0xFF, workspace.bytes(), stream),
             "cudaMemsetAsync (workspace)");

  gpu_test::NormCallTensors t;
  t.x = &d.x.of(w);
  t.gamma = weighted(s) ? &d.gamma : nullptr;
  t.beta = layer(s) ? &d.beta : nullptr;
  t.y = &y;
  t.mean = layer(s) ? &mean : nullptr;
  t.rstd = &rstd;
  t.workspace = workspace.data();
  t.workspace_bytes = bytes;
  sy_norm_forward_args f = gpu_test::norm_forward_args(p, t, stream);
  if (!w.forward_workspace) {
    f.workspace = nullptr;
    f.workspace_bytes = 0;
  }
  if (h) {
    f.residual = d.residual_in->of(w).dl();
    f.residual_out = h->dl();
  }
  op.forward(f);
  sy_norm_backward_args b =
      gpu_test::norm_backward_args(p, t, d.dy.of(w), dx, weighted(s) ? &dweight : nullptr,
                                   layer(s) ? &dbias : nullptr, stream);
  if (h) {
    b.x_or_y = h->dl();
    b.d_residual_out = d.d_residual_out->of(w).dl();
  }
  op.backward(b);
  cuda_check(cudaStreamSynchronize(stream), "the forward and backward");

  Outputs o;
  o.y = y.bytes();
  o.dx = dx.bytes();
  if (h) o.residual_out = h->bytes();
  o.row_stride = w.unaligned ? s.hidden + 1 : s.hidden;
  if (first) {
    o.y_values = y.values();
    o.dx_values = dx.values();
    if (h) o.residual_out_values = h->values();
  }
  if (layer(s)) o.mean = mean.values();
  o.rstd = rstd.values();
  if (weighted(s)) o.dweight = dweight.values();
  if (layer(s)) o.dbias = dbias.values();
  o.padding_untouched =
      y.padding_untouched() && dx.padding_untouched() && (!h || h->padding_untouched());
  return o;
}

// The float64 reference, as the conformance suite has it.
struct Expected {
  std::vector<double> mean, mean_scale, rstd;    // every row
  std::vector<double> y, y_scale, dx, dx_scale, h, h_scale;  // the sampled rows
  std::vector<double> dweight, dweight_scale, dbias, dbias_scale;
};

// Rows whose y and dx are checked against the reference: every `step`-th, and the last.
std::vector<int64_t> sampled_rows(int64_t rows, int64_t step) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < rows; i += step) r.push_back(i);
  if (r.back() != rows - 1) r.push_back(rows - 1);
  return r;
}

void append_row(std::vector<double>& to, const std::vector<double>& from, int64_t row, int64_t h) {
  to.insert(to.end(), from.begin() + row * h, from.begin() + (row + 1) * h);
}

// The conformance suite's reference, 256 rows at a time (no more [N, H] arrays of doubles than
// the inputs): statistics of every row, dweight/dbias over every row, y and dx of `sample`.
Expected reference(const Spec& s, const Inputs& in, const std::vector<int64_t>& sample) {
  const int64_t h = s.hidden;
  conf::NormReferenceProblem rp;
  rp.kind = s.kind;
  rp.hidden = h;
  rp.eps = static_cast<double>(kEps);
  rp.flags = s.flags & ~SY_NORM_ACCUMULATE_GRAD_WEIGHT;  // the start is added here, once
  Expected e;
  if (weighted(s))
    e.dweight = accumulate(s) ? in.dweight_start : std::vector<double>(static_cast<size_t>(h), 0.0);
  if (layer(s))
    e.dbias = accumulate(s) ? in.dbias_start : std::vector<double>(static_cast<size_t>(h), 0.0);
  for (double start : e.dweight) e.dweight_scale.push_back(std::fabs(start));
  for (double start : e.dbias) e.dbias_scale.push_back(std::fabs(start));
  size_t next = 0;
  for (int64_t begin = 0; begin < s.rows; begin += 256) {
    const int64_t end = std::min(s.rows, begin + 256);
    rp.rows = end - begin;
    conf::NormReferenceForwardInput fin;
    fin.x.assign(in.x.begin() + begin * h, in.x.begin() + end * h);
    if (residual(s)) {
      fin.residual.assign(in.residual.begin() + begin * h, in.residual.begin() + end * h);
      fin.round_to_x_dtype = [&s](double v) { return conf::round_to_dtype(v, s.dtype); };
    }
    fin.gamma = in.gamma;
    fin.beta = in.beta;
    const conf::NormReferenceForward f = conf::reference_norm_forward(rp, fin);
    conf::NormReferenceBackwardInput bin;
    bin.dy.assign(in.dy.begin() + begin * h, in.dy.begin() + end * h);
    if (residual(s))
      bin.d_residual_out.assign(in.d_residual_out.begin() + begin * h,
                                in.d_residual_out.begin() + end * h);
    bin.x_or_y = f.h;  // h as stored: x, or round(x + residual)
    bin.gamma = in.gamma;
    bin.beta = in.beta;
    bin.mean = gpu_test::rounded(f.mean, kF32);  // fp32 statistics, as the backward gets them
    bin.rstd = gpu_test::rounded(f.rstd, kF32);
    const conf::NormReferenceBackward g = conf::reference_norm_backward(rp, bin);
    for (int64_t i = 0; i < rp.rows; ++i) {
      e.mean.push_back(f.mean[i]);
      e.rstd.push_back(f.rstd[i]);
      double magnitude = 0;  // the mean's rounding error grows with the row's magnitude
      for (int64_t j = 0; j < h; ++j) magnitude += std::fabs(f.h[i * h + j]);
      e.mean_scale.push_back(magnitude / static_cast<double>(h));
    }
    for (int64_t j = 0; j < h && weighted(s); ++j) {
      e.dweight[j] += g.dgamma[j];
      e.dweight_scale[j] += g.dgamma_scale[j];
      if (layer(s)) e.dbias[j] += g.dbeta[j];
      if (layer(s)) e.dbias_scale[j] += g.dbeta_scale[j];
    }
    for (; next < sample.size() && sample[next] < end; ++next) {
      append_row(e.y, f.y, sample[next] - begin, h);
      append_row(e.y_scale, f.y_magnitude, sample[next] - begin, h);
      append_row(e.dx, g.dx, sample[next] - begin, h);
      append_row(e.dx_scale, g.dx_magnitude, sample[next] - begin, h);
      append_row(e.h, f.h, sample[next] - begin, h);
      append_row(e.h_scale, f.h_magnitude, sample[next] - begin, h);
    }
  }
  return e;
}

// ||got - expected|| / ||expected|| (2-norms; NaN when anything is NaN).
double relative_error(const std::vector<double>& got, const std::vector<double>& expected) {
  double diff = 0, norm = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    diff += (got[k] - expected[k]) * (got[k] - expected[k]);
    norm += expected[k] * expected[k];
  }
  return std::sqrt(diff / norm);
}

std::string format(const char* pattern, double value) {
  char text[32];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// The first way against the reference. Returns what the report says of it: dweight's relative
// error (dx's for L2Norm, which has no dweight).
std::string check_reference(gpu_test::Failures& failures, const Spec& s, const Outputs& o,
                       const Expected& e, const std::vector<int64_t>& sample, int64_t step) {
  const int64_t h = s.hidden;
  const auto written = [&](const char* name, const std::vector<double>& v) {
    const auto nan = std::find_if(v.begin(), v.end(), [](double x) { return std::isnan(x); });
    const int64_t k = nan - v.begin();  // every input is finite: NaN is the poison, unwritten
    if (nan != v.end())
      failures.add(std::string(name) + " is NaN (unwritten?) at row " + std::to_string(k / h) +
                   ", column " + std::to_string(k % h));
  };
  written("y", o.y_values);
  written("dx", o.dx_values);
  if (residual(s)) written("residual_out", o.residual_out_values);
  if (layer(s))
    failures.compare("mean", o.mean, e.mean, conf::statistic_tolerance(s.dtype, 0), 0,
                     &e.mean_scale);
  failures.compare("rstd", o.rstd, e.rstd,
                   conf::statistic_tolerance(s.dtype, gpu_test::max_abs(e.rstd)), 0);
  std::vector<double> y, dx, h_rows;
  for (int64_t row : sample) {
    append_row(y, o.y_values, row, h);
    append_row(dx, o.dx_values, row, h);
    if (residual(s)) append_row(h_rows, o.residual_out_values, row, h);
  }
  const std::string rows =
      " of the sampled rows (every " + std::to_string(step) + "th, and the last)";
  failures.compare("y" + rows, y, e.y, conf::elementwise_tolerance(s.dtype, gpu_test::max_abs(e.y)),
                   h, &e.y_scale);
  failures.compare("dx" + rows, dx, e.dx,
                   conf::elementwise_tolerance(s.dtype, gpu_test::max_abs(e.dx)), h, &e.dx_scale);
  if (residual(s))
    failures.compare("residual_out" + rows, h_rows, e.h,
                     conf::elementwise_tolerance(s.dtype, gpu_test::max_abs(e.h)), h, &e.h_scale);
  if (!weighted(s)) return "dx's relative error against the float64 reference " +
                           format("%.2g", relative_error(dx, e.dx));
  // dweight/dbias: each element within the conformance tolerance (1e-2 / 1e-4 of the sum of
  // |terms|, which random signs make loose), and the whole vector within 1e-2 / 1e-4 of its norm
  // (a missing or doubled chunk of rows is several per cent of it).
  const double limit = same_dtype(s.dtype, kF32) ? 1e-4 : 1e-2;
  const auto row_sum = [&](const std::string& name, const std::vector<double>& got,
                           const std::vector<double>& expected, const std::vector<double>& scale) {
    failures.compare(name, got, expected, conf::row_sum_tolerance(s.dtype), 0, &scale);
    const double error = relative_error(got, expected);
    if (!(error <= limit))
      failures.add(name + ": relative error " + format("%.3g", error) + " over " +
                   format("%g", limit));
    return error;
  };
  if (layer(s)) row_sum("dbias", o.dbias, e.dbias, e.dbias_scale);
  return "dweight's relative error against the float64 reference " +
         format("%.2g", row_sum("dweight", o.dweight, e.dweight, e.dweight_scale));
}

// Adds a failure when the rows of two [rows, hidden] images (y or dx of two ways, row strides as
// given) differ in any bit: how many rows, and the first.
void same_rows(gpu_test::Failures& failures, const std::string& name, const Spec& s,
               const std::vector<unsigned char>& a, int64_t a_stride,
               const std::vector<unsigned char>& b, int64_t b_stride) {
  const size_t size = s.dtype.bits / 8, width = static_cast<size_t>(s.hidden) * size;
  int64_t first = -1, count = 0;
  for (int64_t i = 0; i < s.rows; ++i)
    if (std::memcmp(a.data() + i * a_stride * size, b.data() + i * b_stride * size, width) != 0) {
      if (count++ == 0) first = i;
    }
  if (count != 0)
    failures.add(name + " differs in " + std::to_string(count) + " of " + std::to_string(s.rows) +
                 " rows, first row " + std::to_string(first));
}

std::string check(const switchyard::Runtime& runtime, const Spec& s, const std::vector<Way>& ways,
                  cudaStream_t stream) {
  const Inputs in = inputs_of(s);
  DeviceInputs device(s, in, stream);
  const int64_t step = std::max<int64_t>(1, s.rows / 32);
  const std::vector<int64_t> sample = sampled_rows(s.rows, step);
  const Expected expected = reference(s, in, sample);
  gpu_test::Failures failures;
  std::optional<Outputs> first;
  std::string detail;
  for (const Way& w : ways) {
    Outputs o = run_way(runtime, s, in, device, w, !first, stream);
    if (!o.padding_untouched)
      failures.add(w.name + ": y's, dx's or residual_out's row padding was written");
    if (!first) {
      detail = check_reference(failures, s, o, expected, sample, step);
      first = std::move(o);
      continue;
    }
    const std::string p = w.name + " against " + ways.front().name + ": ";
    same_rows(failures, p + "y", s, o.y, o.row_stride, first->y, first->row_stride);
    failures.same_bits(p + "mean", o.mean, first->mean);
    failures.same_bits(p + "rstd", o.rstd, first->rstd);
    same_rows(failures, p + "dx", s, o.dx, o.row_stride, first->dx, first->row_stride);
    if (residual(s))
      same_rows(failures, p + "residual_out", s, o.residual_out, o.row_stride,
                first->residual_out, first->row_stride);
    failures.same_bits(p + "dweight", o.dweight, first->dweight);
    failures.same_bits(p + "dbias", o.dbias, first->dbias);
  }
  if (!failures.empty()) throw std::runtime_error(failures.text());
  std::string names;
  for (const Way& w : ways) names += (names.empty() ? "" : ", ") + w.name;
  const std::string outputs = std::string(layer(s) ? "y, mean, rstd, dx, dweight, dbias"
                                           : weighted(s) ? "y, rstd, dx, dweight"
                                                         : "y, rstd, dx") +
                              (residual(s) ? ", residual_out" : "");
  return outputs + " bit-identical over " + names + "; " + detail;
}

// Why the plugin does not take the case (a dtype, kind or feature it does not declare), or empty.
std::string undeclared(const switchyard::FamilyInfo& norm, const Spec& s) {
  const uint32_t dtype = same_dtype(s.dtype, kBF16)  ? SY_DTYPE_BF16
                         : same_dtype(s.dtype, kF16) ? SY_DTYPE_F16
                                                     : SY_DTYPE_F32;
  if ((norm.dtypes & dtype) == 0)
    return std::string("the norm does not declare ") + gpu_test::short_name(s.dtype);
  const uint32_t needed =
      (layer(s) ? SY_NORM_FEATURE_LAYER : weighted(s) ? SY_NORM_FEATURE_RMS : SY_NORM_FEATURE_L2) |
      (residual(s) ? SY_NORM_FEATURE_RESIDUAL : 0u) |
      ((s.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0 ? SY_NORM_FEATURE_ZERO_CENTERED_GAMMA : 0u) |
      (accumulate(s) ? SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT : 0u);
  if ((norm.features & needed) != needed)
    return "the norm does not declare a feature the case needs";
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  const gpu_test::PluginCheckStart start =
      gpu_test::start_plugin_check(argc, argv, "norm_paths_check", "norm-paths");
  if (start.exit_status) return *start.exit_status;
  const std::string& prefix = start.prefix;
  const switchyard::PluginInfo& info = start.info;
  int multiprocessors = 0;
  cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, 0);
  // On an H200 (132 SMs) te's backward at H = 4096 runs 128 threads x 32 elements, 4 blocks an
  // SM, over at most 512 chunks: sm_margin 0 holds every chunk's block at once, 8 leaves
  // 124 x 4 = 496 < 512 (16 blocks take two chunks), 100 leaves 32 SMs; rows of hidden + 1
  // elements take the general kernels. A margin the GPU cannot leave is
  // left out, and so are margins where the plugin does not declare them. A forward without a
  // workspace is te's (its README: the RMS/L2 forward then takes its rows by stride); the ABI
  // asks every plugin for workspace_size() bytes, so the way is te's alone.
  const bool te = info.name == "te";
  std::vector<Way> ways;
  std::string left_out;
  for (const Way& w :
       {Way{"sm_margin 0", 0, false}, Way{"sm_margin 8", 8, false},
        Way{"sm_margin 100", 100, false}, Way{"rows of H+1 elements", 0, true},
        Way{"the forward without a workspace", 0, false, false}}) {
    const bool margin_ok =
        w.sm_margin == 0 ||
        (w.sm_margin < multiprocessors && (info.norm.features & SY_NORM_FEATURE_SM_MARGIN) != 0);
    if (margin_ok && (w.forward_workspace || te))
      ways.push_back(w);
    else
      left_out += (left_out.empty() ? "" : ", ") + w.name;
  }
  if (!left_out.empty())
    left_out = " (left out: " + left_out + "; " + std::to_string(multiprocessors) +
               " SMs, sm_margin " +
               ((info.norm.features & SY_NORM_FEATURE_SM_MARGIN) != 0 ? "" : "not ") + "declared" +
               (te ? "" : ", not te") + ")";

  // Chunks (norm_plan.cpp): bf16/fp16 H = 4096 at most 512, so 16384 rows are 512 chunks of 32
  // and 8192 rows 512 of 16. H = 8192: 512 threads x 16 elements, one block an SM, at most 128
  // chunks: 128 of 128 rows (sm_margin 8 leaves 124 blocks). [2050, 4096]: ceil(2050 / 512) = 5
  // rows a chunk, 410 chunks (chunk c: rows c, c + 410, ..., five each); sm_margin 8 still holds
  // a block for each, 100 does not. fp32 H = 4096, RMS and LayerNorm: 256 threads x 16,
  // min(512, 512 x 128 / 256, 132 x 2) = 256 chunks of 16 rows. The bf16 [16384, 4096] RMS/L2
  // forwards (residual too) are te's that claim rows past the grid's first ring-full (16384 >
  // 7 blocks x 132 SMs x the ring's stages); the residual cases stream x and residual through
  // the ring together.
  const uint32_t zc = SY_NORM_ZERO_CENTERED_GAMMA, acc = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  const std::vector<Spec> specs{
      {"rms-bf16-16384x4096", SY_NORM_RMS, kBF16, 16384, 4096, 0},
      {"l2-bf16-16384x4096", SY_NORM_L2, kBF16, 16384, 4096, 0},
      {"rms-bf16-16384x4096-residual", SY_NORM_RMS, kBF16, 16384, 4096, SY_NORM_RESIDUAL},
      {"layer-bf16-8192x4096-residual", SY_NORM_LAYER, kBF16, 8192, 4096, SY_NORM_RESIDUAL},
      {"layer-bf16-16384x4096", SY_NORM_LAYER, kBF16, 16384, 4096, 0},
      {"rms-bf16-16384x8192", SY_NORM_RMS, kBF16, 16384, 8192, 0},
      {"layer-bf16-16384x8192", SY_NORM_LAYER, kBF16, 16384, 8192, 0},
      {"rms-bf16-2050x4096", SY_NORM_RMS, kBF16, 2050, 4096, 0},
      {"layer-bf16-2050x4096", SY_NORM_LAYER, kBF16, 2050, 4096, 0},
      {"layer-bf16-8192x4096-zero-centred", SY_NORM_LAYER, kBF16, 8192, 4096, zc},
      {"layer-bf16-8192x4096-accumulate-f32", SY_NORM_LAYER, kBF16, 8192, 4096, acc},
      {"rms-f16-8192x4096", SY_NORM_RMS, kF16, 8192, 4096, 0},
      {"rms-f32-4096x4096", SY_NORM_RMS, kF32, 4096, 4096, 0},
      {"layer-f32-4096x4096", SY_NORM_LAYER, kF32, 4096, 4096, 0},
  };
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  switchyard::RuntimeOptions options;
  options.norm = info.path;
  const switchyard::Runtime runtime(options);
  int passed = 0, failed = 0, skipped = 0;
  for (const Spec& s : specs) {
    const auto start = std::chrono::steady_clock::now();
    std::string verdict = "PASS", detail = undeclared(info.norm, s);
    if (!detail.empty()) {
      verdict = "SKIP";
    } else {
      try {
        detail = check(runtime, s, ways, stream) + left_out;
      } catch (const std::exception& e) {
        verdict = "FAIL";
        detail = e.what();
      }
    }
    cudaDeviceSynchronize();  // a failed case may leave an error behind; the next starts clean
    cudaGetLastError();
    (verdict == "PASS" ? passed : verdict == "FAIL" ? failed : skipped) += 1;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::cout << verdict << ' ' << prefix << s.name << "  " << detail << format(" (%.0f ms)", ms)
              << std::endl;
  }
  cudaStreamDestroy(stream);
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed == 0 ? 0 : 1;
}
