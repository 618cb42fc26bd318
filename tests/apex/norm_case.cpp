#include "norm_case.hpp"

#include "emulator.hpp"
#include "plan.hpp"

#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_norm.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <optional>

namespace apex_test {
namespace {

namespace cf = switchyard::conformance;
using namespace switchyard::apex;

Dtype dtype_of(DLDataType t) {
  if (t.bits == 32) return Dtype::F32;
  return t.code == kDLBfloat ? Dtype::BF16 : Dtype::F16;
}

class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed * 6364136223846793005ull + 1442695040888963407ull) {}
  double uniform(double low, double high) {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return low + (high - low) * static_cast<double>(state_ >> 11) / 9007199254740992.0;
  }

 private:
  uint64_t state_;
};

std::vector<double> random_values(Lcg& rng, int64_t n, double low, double high) {
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = rng.uniform(low, high);
  return v;
}

std::vector<double> rows_of(const std::vector<double>& all, int64_t hidden, int64_t first,
                            int64_t count) {
  return std::vector<double>(all.begin() + first * hidden, all.begin() + (first + count) * hidden);
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double e : v) m = std::max(m, std::fabs(e));
  return m;
}

bool compare(const char* name, const std::vector<double>& got, const std::vector<double>& expected,
             const cf::Tolerance& tolerance, int64_t columns,
             const std::vector<double>* scale = nullptr) {
  const std::optional<cf::Mismatch> m = cf::find_mismatch(got, expected, tolerance, scale);
  if (m) FAIL_CHECK(cf::describe_mismatch(name, *m, columns));
  return !m.has_value();
}

bool is_layer(const NormCase& c) { return c.kind == SY_NORM_LAYER; }
bool has(const NormCase& c, uint32_t flag) { return (c.flags & flag) != 0; }

}  // namespace

std::string describe(const NormCase& c) {
  const char* kinds[] = {"LayerNorm", "RMSNorm", "L2Norm"};
  std::string d = std::string(kinds[c.kind]) + " N=" + std::to_string(c.rows) +
                  " H=" + std::to_string(c.hidden) + " x=" + sy::dtype_name(c.x) +
                  " y=" + sy::dtype_name(c.y) + " w=" + sy::dtype_name(c.weight) +
                  " gw=" + sy::dtype_name(c.grad_weight) + " flags=" + std::to_string(c.flags);
  if (!c.bias) d += " no-bias";
  if (c.pad) d += " pad=" + std::to_string(c.pad);
  if (c.misalign) d += " misalign=" + std::to_string(c.misalign);
  if (c.x_offset != 0) d += " x_offset=" + std::to_string(c.x_offset);
  if (c.first_row) d += " first_row=" + std::to_string(c.first_row);
  return d;
}

NormOutputs run_norm_case(const NormCase& c) {
  INFO(describe(c));
  const int64_t n = c.rows, h = c.hidden;
  const int64_t data_rows = c.data_rows > 0 ? c.data_rows : n;
  const bool gamma = c.kind != SY_NORM_L2;
  const bool beta = is_layer(c) && c.bias;
  const bool zero_centered = has(c, SY_NORM_ZERO_CENTERED_GAMMA);
  const bool memory_efficient = has(c, SY_NORM_MEMORY_EFFICIENT);
  const bool accumulate = has(c, SY_NORM_ACCUMULATE_GRAD_WEIGHT);

  // Data, drawn for data_rows rows so that sub-batches see the same rows.
  Lcg rng(c.seed);
  std::vector<double> x_all = random_values(rng, data_rows * h, -3.0, 3.0);
  for (double& v : x_all) v += c.x_offset;
  std::vector<double> dy_all = random_values(rng, data_rows * h, -1.0, 1.0);
  std::vector<double> g_values = zero_centered ? random_values(rng, h, -0.5, 0.5)
                                               : random_values(rng, h, 0.5, 1.5);
  std::vector<double> b_values = random_values(rng, h, -0.5, 0.5);
  std::vector<double> dg_initial = random_values(rng, h, -1.0, 1.0);
  std::vector<double> db_initial = random_values(rng, h, -1.0, 1.0);

  const int64_t stride = h + c.pad;
  HostTensor x(c.x, n, h, stride, c.misalign);
  x.fill(rows_of(x_all, h, c.first_row, n));
  HostTensor weight = HostTensor::vector(c.weight, h);
  weight.fill(g_values);
  HostTensor bias = HostTensor::vector(c.weight, h);
  bias.fill(b_values);
  NormOutputs out;
  out.y = HostTensor(c.y, n, h, stride, c.misalign);
  out.mean = HostTensor::vector(sy::kF32, n);
  out.rstd = HostTensor::vector(sy::kF32, n);

  ForwardParams f;
  f.rows = n;
  f.hidden = h;
  f.eps = 1e-5f;
  f.kind = static_cast<NormKind>(c.kind);
  f.zero_centered_gamma = zero_centered;
  f.vector_access = h % 8 == 0 && x.aligned16() && out.y.aligned16();
  out.vector_access = f.vector_access;
  f.x_dtype = dtype_of(c.x);
  f.y_dtype = dtype_of(c.y);
  f.weight_dtype = dtype_of(c.weight);
  f.x = x.data();
  f.x_stride = x.stride();
  f.y = out.y.data();
  f.y_stride = out.y.stride();
  f.weight = gamma ? weight.data() : nullptr;
  f.bias = beta ? bias.data() : nullptr;
  f.mean = is_layer(c) ? static_cast<float*>(out.mean.data()) : nullptr;
  f.rstd = static_cast<float*>(out.rstd.data());
  emulate_forward(f);

  cf::NormReferenceProblem rp;
  rp.kind = c.kind;
  rp.rows = n;
  rp.hidden = h;
  rp.eps = 1e-5f;
  rp.flags = c.flags;
  cf::NormReferenceForwardInput fin;
  fin.x = x.values();
  if (gamma) fin.gamma = weight.values();
  if (beta) fin.beta = bias.values();
  const cf::NormReferenceForward ref = cf::reference_norm_forward(rp, fin);

  cf::Tolerance y_tolerance = cf::elementwise_tolerance(c.y, max_abs(ref.y));
  y_tolerance.atol += c.y_extra_atol;
  out.forward_ok &= compare("y", out.y.values(), ref.y, y_tolerance, h, &ref.y_magnitude);
  if (is_layer(c)) {
    std::vector<double> mean_scale(static_cast<size_t>(n), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < h; ++j) mean_scale[i] += std::fabs(ref.h[i * h + j]);
      mean_scale[i] /= static_cast<double>(h);
    }
    out.statistics_ok &= compare("mean", out.mean.values(), ref.mean,
                                 cf::statistic_tolerance(c.x, 0), 0, &mean_scale);
  }
  out.statistics_ok &= compare("rstd", out.rstd.values(), ref.rstd,
                               cf::statistic_tolerance(c.x, max_abs(ref.rstd)), 0);
  out.forward_ok &= out.statistics_ok;
  CHECK_MESSAGE(out.y.padding_untouched(), "forward wrote outside y's rows");
  CHECK_MESSAGE(x.padding_untouched(), "x's padding changed");

  // Backward from the reference's h or y and fp32 statistics (independent of the forward).
  const DLDataType in_dtype = memory_efficient ? c.y : c.x;
  HostTensor in(in_dtype, n, h, stride, c.misalign);
  std::vector<double> in_values = memory_efficient ? ref.y : fin.x;
  for (double& v : in_values) v = cf::round_to_dtype(v, in_dtype);
  in.fill(in_values);
  HostTensor dy(c.y, n, h, stride, c.misalign);
  dy.fill(rows_of(dy_all, h, c.first_row, n));
  HostTensor mean_in = HostTensor::vector(sy::kF32, n);
  HostTensor rstd_in = HostTensor::vector(sy::kF32, n);
  if (n > 0) {
    mean_in.fill(ref.mean);
    rstd_in.fill(ref.rstd);
  }
  out.dx = HostTensor(c.x, n, h, stride, c.misalign);
  const bool want_dgamma = gamma && c.dweight;
  const bool want_dbeta = is_layer(c) && c.dbias;
  out.dweight = HostTensor::vector(c.grad_weight, h);
  out.dbias = HostTensor::vector(c.grad_weight, h);
  if (accumulate) {
    out.dweight.fill(dg_initial);
    out.dbias.fill(db_initial);
  }

  BackwardParams b;
  b.rows = n;
  b.hidden = h;
  b.kind = f.kind;
  b.zero_centered_gamma = zero_centered;
  b.memory_efficient = memory_efficient;
  b.vector_access = h % 8 == 0 && in.aligned16() && dy.aligned16() && out.dx.aligned16();
  b.x_dtype = dtype_of(c.x);
  b.y_dtype = dtype_of(c.y);
  b.weight_dtype = dtype_of(c.weight);
  b.grad_weight_dtype = dtype_of(c.grad_weight);
  b.dy = dy.data();
  b.dy_stride = dy.stride();
  b.x_or_y = in.data();
  b.x_or_y_stride = in.stride();
  b.weight = gamma ? weight.data() : nullptr;
  b.bias = beta ? bias.data() : nullptr;
  b.mean = is_layer(c) && !memory_efficient ? static_cast<const float*>(mean_in.data()) : nullptr;
  b.rstd = static_cast<const float*>(rstd_in.data());
  b.dx = out.dx.data();
  b.dx_stride = out.dx.stride();
  b.dweight = want_dgamma ? out.dweight.data() : nullptr;
  b.dbias = want_dbeta ? out.dbias.data() : nullptr;
  b.accumulate = accumulate;
  const RowPartition partition = row_partition(n, h);
  b.rows_per_chunk = partition.rows_per_chunk;
  b.chunks = partition.chunks;
  std::vector<float> workspace(static_cast<size_t>(2 * partition.chunks * h), std::nanf(""));
  if ((want_dgamma || want_dbeta) && n > 0) {
    if (want_dgamma) b.partial_gamma = workspace.data();
    if (want_dbeta) b.partial_beta = workspace.data() + partition.chunks * h;
  }
  emulate_backward(b);

  cf::NormReferenceBackwardInput bin;
  bin.dy = dy.values();
  bin.x_or_y = in.values();
  bin.gamma = fin.gamma;
  bin.beta = fin.beta;
  bin.mean = mean_in.values();
  bin.rstd = rstd_in.values();
  if (accumulate) {  // the values the buffers held before the call
    for (int64_t j = 0; j < h; ++j) {
      bin.dgamma_initial.push_back(cf::round_to_dtype(dg_initial[j], c.grad_weight));
      bin.dbeta_initial.push_back(cf::round_to_dtype(db_initial[j], c.grad_weight));
    }
  }
  const cf::NormReferenceBackward grads = cf::reference_norm_backward(rp, bin);
  out.backward_ok &= compare("dx", out.dx.values(), grads.dx,
                             cf::elementwise_tolerance(c.x, max_abs(grads.dx)), h,
                             &grads.dx_magnitude);
  const cf::Tolerance sums = cf::row_sum_tolerance(c.x);
  if (want_dgamma)
    out.backward_ok &=
        compare("dweight", out.dweight.values(), grads.dgamma, sums, 0, &grads.dgamma_scale);
  if (want_dbeta) {
    // The reference gives dβ only with a β; without one dβ = Σ dy all the same.
    std::vector<double> dbeta = grads.dbeta, scale = grads.dbeta_scale;
    if (dbeta.empty()) {
      dbeta.assign(static_cast<size_t>(h), 0.0);
      scale.assign(static_cast<size_t>(h), 0.0);
      const std::vector<double> d = dy.values();
      for (int64_t j = 0; j < h; ++j) {
        if (accumulate) {
          dbeta[j] = cf::round_to_dtype(db_initial[j], c.grad_weight);
          scale[j] = std::fabs(dbeta[j]);
        }
        for (int64_t i = 0; i < n; ++i) {
          dbeta[j] += d[i * h + j];
          scale[j] += std::fabs(d[i * h + j]);
        }
      }
    }
    out.backward_ok &= compare("dbias", out.dbias.values(), dbeta, sums, 0, &scale);
  }
  CHECK_MESSAGE(out.dx.padding_untouched(), "backward wrote outside dx's rows");
  return out;
}

}  // namespace apex_test
