// LayerNorm / RMSNorm / L2Norm against the float64 reference: dtypes (x, y, weight chosen
// independently), zero-centred gamma, fused residual both ways, memory-efficient backward,
// accumulation of dgamma/dbeta, in-place dx.
#include "norm_harness.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include <string>

using namespace native_test;

namespace {

const sy_norm_kind kKinds[] = {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2};
const DLDataType kDtypes[] = {sy::kF32, sy::kBF16, sy::kF16};

// Tensors rounded once from a double computation: fp32 to rtol 1e-5, 16-bit to 1 ulp.
void check_rounded(const Tensor& actual, const std::vector<double>& expected, const std::string& what) {
  if (sy::same(actual.dtype(), sy::kF32))
    check_close(actual.values(), expected, 1e-5, 1e-6 * max_abs(expected), what);
  else
    check_ulps(actual, expected, 1, what);
}

std::vector<double> plus(std::vector<double> a, const std::vector<double>& b) {
  for (size_t k = 0; k < a.size(); ++k) a[k] += b[k];
  return a;
}

void run_and_check(const sy_norm_problem& p, uint64_t seed) {
  const NormData data = random_norm_data(p, seed);
  NormSetup s(p, data);
  sy_error err = make_error();
  sy_norm_forward_args f = s.forward_args();
  REQUIRE_MESSAGE(norm().forward(&f, &err) == SY_OK, err.message);
  const NormReferenceInput in = reference_input(s, data);
  const NormReference ref = norm_reference(in);
  check_rounded(s.y, ref.y, "y");
  check_close(s.rstd.values(), ref.rstd, 1e-5, 0, "rstd");
  if (p.kind == SY_NORM_LAYER) check_close(s.mean.values(), ref.mean, 1e-5, 1e-6, "mean");
  if (p.flags & SY_NORM_RESIDUAL) check_close(s.residual_out.values(), in.h, 0, 0, "residual_out (h)");

  sy_norm_backward_args b = s.backward_args();
  REQUIRE_MESSAGE(norm().backward(&b, &err) == SY_OK, err.message);
  const std::vector<double> expected_dx =
      (p.flags & SY_NORM_RESIDUAL) ? plus(ref.dx, data.d_residual_out) : ref.dx;
  // dgamma/dbeta are sums over rows: fp32 buffers to rtol 1e-5, 16-bit ones within 1 ulp.
  auto check_weight_grad = [&](const Tensor& actual, const std::vector<double>& expected,
                               double loose, const char* what) {
    if (loose > 0)
      check_close(actual.values(), expected, loose, loose * max_abs(expected), what);
    else if (sy::same(actual.dtype(), sy::kF32))
      check_close(actual.values(), expected, 1e-5, 1e-7 * max_abs(expected), what);
    else
      check_ulps(actual, expected, 1, what);
  };
  double loose = 0;
  if (p.flags & SY_NORM_MEMORY_EFFICIENT) {
    // x-hat comes back from the rounded y: a looser bound, as for any memory-efficient norm.
    loose = sy::same(p.y_dtype, sy::kF32) ? 1e-4 : 3e-2;
    check_close(s.dx.values(), expected_dx, loose, loose * max_abs(expected_dx), "dx (from y)");
  } else {
    check_rounded(s.dx, expected_dx, "dx");
  }
  if (p.kind != SY_NORM_L2) check_weight_grad(s.dweight, ref.dgamma, loose, "dgamma");
  if (p.kind == SY_NORM_LAYER) check_weight_grad(s.dbias, ref.dbeta, loose, "dbeta");
}

}  // namespace

TEST_CASE("norm forward and backward match the float64 reference") {
  load_native();
  uint64_t seed = 1;
  for (sy_norm_kind kind : kKinds)
    for (DLDataType x_dtype : kDtypes)
      for (uint32_t flags : {0u, unsigned{SY_NORM_ZERO_CENTERED_GAMMA}, unsigned{SY_NORM_RESIDUAL},
                             unsigned{SY_NORM_RESIDUAL | SY_NORM_ZERO_CENTERED_GAMMA}}) {
        sy_norm_problem p = make_norm_problem(kind, 9, 48, x_dtype, flags);
        CAPTURE(kind);
        CAPTURE(sy::dtype_name(x_dtype));
        CAPTURE(flags);
        run_and_check(p, ++seed);
      }
}

TEST_CASE("norm: y, weight and grad-weight dtypes are independent of x") {
  load_native();
  uint64_t seed = 100;
  for (sy_norm_kind kind : kKinds)
    for (DLDataType y_dtype : kDtypes)
      for (DLDataType weight_dtype : kDtypes) {
        sy_norm_problem p = make_norm_problem(kind, 5, 40, sy::kBF16, 0);
        p.y_dtype = y_dtype;
        p.weight_dtype = weight_dtype;
        p.grad_weight_dtype = weight_dtype;
        CAPTURE(kind);
        CAPTURE(sy::dtype_name(y_dtype));
        CAPTURE(sy::dtype_name(weight_dtype));
        run_and_check(p, ++seed);
      }
}

TEST_CASE("norm: memory-efficient backward (from y) agrees with the backward from x") {
  load_native();
  uint64_t seed = 200;
  for (sy_norm_kind kind : kKinds)
    for (DLDataType dtype : {sy::kF32, sy::kBF16})
      for (uint32_t flags : {0u, unsigned{SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_RESIDUAL}}) {
        CAPTURE(kind);
        CAPTURE(sy::dtype_name(dtype));
        CAPTURE(flags);
        run_and_check(make_norm_problem(kind, 7, 33, dtype, flags | SY_NORM_MEMORY_EFFICIENT), ++seed);
      }
}

TEST_CASE("norm: SY_NORM_ACCUMULATE_GRAD_WEIGHT adds into the fp32 buffers") {
  load_native();
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS}) {
    CAPTURE(kind);
    const sy_norm_problem plain = make_norm_problem(kind, 6, 70, sy::kBF16, 0);
    const NormData data = random_norm_data(plain, 9);
    NormSetup overwrite(plain, data);
    NormSetup accumulate(make_norm_problem(kind, 6, 70, sy::kBF16, SY_NORM_ACCUMULATE_GRAD_WEIGHT), data);
    std::vector<double> initial;
    for (int64_t j = 0; j < 70; ++j) initial.push_back(0.25 * static_cast<double>(j % 7) - 0.5);
    accumulate.dweight.fill(initial);
    accumulate.dbias.fill(initial);
    sy_error err = make_error();
    for (NormSetup* s : {&overwrite, &accumulate}) {
      sy_norm_forward_args f = s->forward_args();
      REQUIRE(norm().forward(&f, &err) == SY_OK);
      sy_norm_backward_args b = s->backward_args();
      REQUIRE_MESSAGE(norm().backward(&b, &err) == SY_OK, err.message);
    }
    check_close(accumulate.dweight.values(), plus(overwrite.dweight.values(), initial), 1e-6, 1e-6,
                "accumulated dgamma");
    if (kind == SY_NORM_LAYER)
      check_close(accumulate.dbias.values(), plus(overwrite.dbias.values(), initial), 1e-6, 1e-6,
                  "accumulated dbeta");
    CHECK(accumulate.dx.same_bits(overwrite.dx));
  }
}

TEST_CASE("norm: in-place dx (over dy or over x) equals out of place") {
  load_native();
  for (sy_norm_kind kind : kKinds) {
    CAPTURE(kind);
    const sy_norm_problem p = make_norm_problem(kind, 8, 64, sy::kBF16, 0);
    const NormData data = random_norm_data(p, 17);
    NormSetup reference(p, data);
    NormSetup over_dy(p, data);
    NormSetup over_x(p, data);
    sy_error err = make_error();
    for (NormSetup* s : {&reference, &over_dy, &over_x}) {
      sy_norm_forward_args f = s->forward_args();
      REQUIRE(norm().forward(&f, &err) == SY_OK);
    }
    sy_norm_backward_args b = reference.backward_args();
    REQUIRE(norm().backward(&b, &err) == SY_OK);
    sy_norm_backward_args b_dy = over_dy.backward_args();
    b_dy.dx = over_dy.dy.dl();
    REQUIRE_MESSAGE(norm().backward(&b_dy, &err) == SY_OK, err.message);
    CHECK(over_dy.dy.same_bits(reference.dx));
    sy_norm_backward_args b_x = over_x.backward_args();
    b_x.dx = over_x.x.dl();
    REQUIRE_MESSAGE(norm().backward(&b_x, &err) == SY_OK, err.message);
    CHECK(over_x.x.same_bits(reference.dx));
    if (kind != SY_NORM_L2) {
      CHECK(over_dy.dweight.same_bits(reference.dweight));
      CHECK(over_x.dweight.same_bits(reference.dweight));
    }
  }
}

TEST_CASE("norm: in-place forward (y over x, residual_out over x) equals out of place") {
  load_native();
  const sy_norm_problem p = make_norm_problem(SY_NORM_RMS, 4, 50, sy::kF16, SY_NORM_RESIDUAL);
  const NormData data = random_norm_data(p, 5);
  NormSetup reference(p, data);
  NormSetup in_place(p, data);
  sy_error err = make_error();
  sy_norm_forward_args f = reference.forward_args();
  REQUIRE(norm().forward(&f, &err) == SY_OK);
  sy_norm_forward_args g = in_place.forward_args();
  g.residual_out = in_place.residual.dl();  // h over the residual stream, as inference engines do
  g.y = in_place.x.dl();
  REQUIRE_MESSAGE(norm().forward(&g, &err) == SY_OK, err.message);
  CHECK(in_place.residual.same_bits(reference.residual_out));
  CHECK(in_place.x.same_bits(reference.y));
  CHECK(in_place.rstd.same_bits(reference.rstd));
}

TEST_CASE("norm: optional tensors may be left out; zero rows is fine") {
  load_native();
  sy_error err = make_error();
  SUBCASE("LayerNorm without bias, backward without dweight/dbias, residual without d_residual_out") {
    const sy_norm_problem p = make_norm_problem(SY_NORM_LAYER, 5, 20, sy::kF32, SY_NORM_RESIDUAL);
    const NormData data = random_norm_data(p, 3);
    NormSetup s(p, data, /*with_optional=*/false);
    sy_norm_forward_args f = s.forward_args();
    REQUIRE_MESSAGE(norm().forward(&f, &err) == SY_OK, err.message);
    const NormReference ref = norm_reference(reference_input(s, data));
    check_close(s.y.values(), ref.y, 1e-5, 1e-6, "y without bias");
    sy_norm_backward_args b = s.backward_args();
    REQUIRE_MESSAGE(norm().backward(&b, &err) == SY_OK, err.message);
    check_close(s.dx.values(), ref.dx, 1e-5, 1e-6 * max_abs(ref.dx), "dx without d_residual_out");
    CHECK(std::isnan(s.dweight.get(0)));  // not requested, not written
  }
  SUBCASE("zero rows: dgamma is zero, or unchanged when accumulating") {
    const sy_norm_problem p = make_norm_problem(SY_NORM_RMS, 0, 16, sy::kF32, 0);
    NormSetup s(p, random_norm_data(p, 1));
    sy_norm_forward_args f = s.forward_args();
    REQUIRE_MESSAGE(norm().forward(&f, &err) == SY_OK, err.message);
    sy_norm_backward_args b = s.backward_args();
    REQUIRE_MESSAGE(norm().backward(&b, &err) == SY_OK, err.message);
    for (int64_t j = 0; j < 16; ++j) CHECK(s.dweight.get(j) == 0.0);
  }
  SUBCASE("L2Norm ignores ZERO_CENTERED_GAMMA and ACCUMULATE_GRAD_WEIGHT (no gamma)") {
    const sy_norm_problem p = make_norm_problem(
        SY_NORM_L2, 3, 24, sy::kF32, SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_ACCUMULATE_GRAD_WEIGHT);
    run_and_check(p, 77);
  }
}
