#include "norm_harness.hpp"

#include <doctest/doctest.h>

namespace native_test {

sy_norm_problem make_norm_problem(sy_norm_kind kind, int64_t rows, int64_t hidden,
                                  DLDataType x_dtype, uint32_t flags) {
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = kind;
  p.rows = rows;
  p.hidden = hidden;
  p.eps = 1e-5f;
  p.x_dtype = x_dtype;
  p.y_dtype = x_dtype;
  p.weight_dtype = x_dtype;
  p.grad_weight_dtype = sy::kF32;
  p.device = DLDevice{kDLCPU, 0};
  p.flags = flags;
  p.sm_margin = 0;
  return p;
}

namespace {
std::vector<double> random_values(Random& random, DLDataType dtype, int64_t count, double low,
                                  double high) {
  Tensor rounding(dtype, {1});
  std::vector<double> out;
  for (int64_t k = 0; k < count; ++k) {
    rounding.set(0, random.uniform(low, high));
    out.push_back(rounding.get(0));
  }
  return out;
}
}  // namespace

NormData random_norm_data(const sy_norm_problem& p, uint64_t seed) {
  Random random(seed);
  NormData d;
  d.rows = p.rows;
  d.hidden = p.hidden;
  const int64_t n = p.rows * p.hidden;
  d.x = random_values(random, p.x_dtype, n, -2.0, 3.0);  // not centred: LN's mean matters
  d.residual = random_values(random, p.x_dtype, n, -1.0, 1.0);
  const bool centred = (p.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0;
  const DLDataType w = p.kind == SY_NORM_L2 ? sy::kF32 : p.weight_dtype;
  d.weight = random_values(random, w, p.hidden, centred ? -0.5 : 0.5, centred ? 0.5 : 1.5);
  d.bias = random_values(random, w, p.hidden, -0.5, 0.5);
  d.dy = random_values(random, p.y_dtype, n, -1.0, 1.0);
  d.d_residual_out = random_values(random, p.x_dtype, n, -0.5, 0.5);
  return d;
}

NormSetup::NormSetup(const sy_norm_problem& p, const NormData& data, bool optional)
    : problem(p),
      with_optional(optional),
      x(p.x_dtype, {p.rows, p.hidden}),
      residual(p.x_dtype, {p.rows, p.hidden}),
      weight(p.kind == SY_NORM_L2 ? sy::kF32 : p.weight_dtype, {p.hidden}),
      bias(p.kind == SY_NORM_L2 ? sy::kF32 : p.weight_dtype, {p.hidden}),
      y(p.y_dtype, {p.rows, p.hidden}),
      residual_out(p.x_dtype, {p.rows, p.hidden}),
      mean(sy::kF32, {p.rows}),
      rstd(sy::kF32, {p.rows}),
      dy(p.y_dtype, {p.rows, p.hidden}),
      d_residual_out(p.x_dtype, {p.rows, p.hidden}),
      dx(p.x_dtype, {p.rows, p.hidden}),
      dweight(p.kind == SY_NORM_L2 ? sy::kF32 : p.grad_weight_dtype, {p.hidden}),
      dbias(p.kind == SY_NORM_L2 ? sy::kF32 : p.grad_weight_dtype, {p.hidden}) {
  x.fill(data.x);
  residual.fill(data.residual);
  weight.fill(data.weight);
  bias.fill(data.bias);
  dy.fill(data.dy);
  d_residual_out.fill(data.d_residual_out);
  for (Tensor* t : {&y, &residual_out, &mean, &rstd, &dx, &dweight, &dbias}) t->poison();
  sy_error err = make_error();
  REQUIRE_MESSAGE(norm().workspace_size(&problem, &workspace_bytes, &err) == SY_OK, err.message);
  workspace.assign(static_cast<size_t>(workspace_bytes / 8 + 1), 0);
}

sy_norm_forward_args NormSetup::forward_args() {
  sy_norm_forward_args a{};
  a.struct_size = sizeof a;
  a.problem = &problem;
  a.x = x.dl();
  a.residual = has_residual() ? residual.dl() : nullptr;
  a.weight = has_weight() ? weight.dl() : nullptr;
  a.bias = has_bias() ? bias.dl() : nullptr;
  a.y = y.dl();
  a.residual_out = has_residual() ? residual_out.dl() : nullptr;
  a.mean = problem.kind == SY_NORM_LAYER ? mean.dl() : nullptr;
  a.rstd = rstd.dl();
  a.workspace = workspace.data();
  a.workspace_bytes = workspace_bytes;
  return a;
}

sy_norm_backward_args NormSetup::backward_args() {
  sy_norm_backward_args a{};
  a.struct_size = sizeof a;
  a.problem = &problem;
  a.dy = dy.dl();
  if (problem.flags & SY_NORM_MEMORY_EFFICIENT) a.x_or_y = y.dl();
  else a.x_or_y = has_residual() ? residual_out.dl() : x.dl();
  a.weight = has_weight() ? weight.dl() : nullptr;
  a.bias = has_bias() ? bias.dl() : nullptr;
  a.mean = problem.kind == SY_NORM_LAYER ? mean.dl() : nullptr;
  a.rstd = rstd.dl();
  a.d_residual_out = has_residual() && with_optional ? d_residual_out.dl() : nullptr;
  a.dx = dx.dl();
  a.dweight = has_weight() && with_optional ? dweight.dl() : nullptr;
  a.dbias = has_bias() ? dbias.dl() : nullptr;
  a.workspace = workspace.data();
  a.workspace_bytes = workspace_bytes;
  return a;
}

NormReferenceInput reference_input(const NormSetup& s, const NormData& data) {
  const sy_norm_problem& p = s.problem;
  NormReferenceInput in;
  in.kind = p.kind;
  in.rows = p.rows;
  in.hidden = p.hidden;
  in.eps = static_cast<double>(p.eps);
  Tensor rounding(p.x_dtype, {1});
  for (size_t k = 0; k < data.x.size(); ++k) {
    if (p.flags & SY_NORM_RESIDUAL) {
      rounding.set(0, data.x[k] + data.residual[k]);
      in.h.push_back(rounding.get(0));
    } else {
      in.h.push_back(data.x[k]);
    }
  }
  if (p.kind != SY_NORM_L2)
    for (double g : data.weight)
      in.gamma.push_back((p.flags & SY_NORM_ZERO_CENTERED_GAMMA)
                             ? static_cast<double>(1.0f + static_cast<float>(g))
                             : g);
  if (s.has_bias()) in.beta = data.bias;
  in.dy = data.dy;
  return in;
}

}  // namespace native_test
