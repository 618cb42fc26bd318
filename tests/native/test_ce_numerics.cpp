// Cross entropy at TP=1 against the float64 reference: every dtype pairing, both smoothing
// conventions, ignore_index, unowned labels, argmax ties, grad in forward, backward, in place,
// strided rows, and logits left untouched.
#include "ce_harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace native_test;

namespace {

const DLDataType kDtypes[] = {sy::kF32, sy::kBF16, sy::kF16};

struct SmoothingCase {
  float alpha;
  sy_smoothing convention;
  const char* name;
};
const SmoothingCase kSmoothing[] = {{0.0f, SY_SMOOTHING_MEGATRON, "none"},
                                    {0.1f, SY_SMOOTHING_MEGATRON, "megatron 0.1"},
                                    {0.2f, SY_SMOOTHING_PYTORCH, "pytorch 0.2"}};

void check_gradient(const Tensor& grad, const std::vector<double>& expected, const std::string& what) {
  if (sy::same(grad.dtype(), sy::kF32))
    check_close(grad.values(), expected, 1e-5, 1e-6 * max_abs(expected), what);
  else
    check_ulps(grad, expected, 1, what);  // rounded once from a more precise value
}

}  // namespace

TEST_CASE("cross entropy forward and backward match the float64 reference") {
  load_native();
  const int64_t rows = 13, vocab = 37;
  for (DLDataType logits_dtype : kDtypes)
    for (DLDataType grad_dtype : kDtypes)
      for (const SmoothingCase& smoothing : kSmoothing)
        for (uint32_t ignore : {0u, unsigned{SY_CE_IGNORE_INDEX}}) {
          CAPTURE(sy::dtype_name(logits_dtype));
          CAPTURE(sy::dtype_name(grad_dtype));
          CAPTURE(smoothing.name);
          CAPTURE(ignore);
          sy_ce_problem p = make_ce_problem(rows, vocab, logits_dtype,
                                            ignore | SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD);
          p.grad_dtype = grad_dtype;
          p.label_smoothing = smoothing.alpha;
          p.smoothing = smoothing.convention;
          // int32 labels for half of the cases
          if (sy::same(grad_dtype, sy::kBF16)) p.label_dtype = sy::kI32;
          const CeData data = random_ce_data(rows, vocab, logits_dtype, 7);
          CeSetup s(p, data);
          Tensor logits_before(logits_dtype, {rows, vocab});
          logits_before.fill(s.logits.values());

          sy_error err = make_error();
          sy_ce_forward_args fwd = s.forward_args();
          REQUIRE_MESSAGE(ce().forward(&fwd, &err) == SY_OK, err.message);

          const CeReference ref_fwd = ce_reference(reference_input(p, data, data.grad_scale));
          check_close(s.loss.values(), ref_fwd.loss, 1e-5, 1e-6, "loss");
          check_close(s.lse.values(), ref_fwd.lse, 1e-5, 0, "lse");
          for (int64_t i = 0; i < rows; ++i) CHECK(s.argmax.get(i) == ref_fwd.argmax[static_cast<size_t>(i)]);
          CHECK(s.argmax.get(3) == 5);  // a tie: lowest id
          check_gradient(s.grad, ref_fwd.grad, "grad in forward");
          CHECK(s.logits.same_bits(logits_before));  // logits survive forward
          if (ignore != 0) {
            CHECK(s.loss.get(1) == 0.0);
            for (int64_t j = 0; j < vocab; ++j) CHECK(s.grad.get(1, j) == 0.0);
          }

          s.grad.poison();
          sy_ce_backward_args bwd = s.backward_args();
          REQUIRE_MESSAGE(ce().backward(&bwd, &err) == SY_OK, err.message);
          const CeReference ref_bwd = ce_reference(reference_input(p, data, data.grad_loss));
          check_gradient(s.grad, ref_bwd.grad, "backward");
          CHECK(s.logits.same_bits(logits_before));
        }
}

TEST_CASE("an unowned label without SY_CE_CHECK_LABELS gives lse - max and no one-hot") {
  load_native();
  sy_ce_problem p = make_ce_problem(4, 9, sy::kF32, 0);
  CeData data = random_ce_data(4, 9, sy::kF32, 3, false);
  data.labels = {9, -1, 100, 2};
  CeSetup s(p, data);
  sy_error err = make_error();
  sy_ce_forward_args fwd = s.forward_args();
  REQUIRE_MESSAGE(ce().forward(&fwd, &err) == SY_OK, err.message);
  for (int64_t i = 0; i < 3; ++i) {
    double m = -1e300;
    for (int64_t j = 0; j < 9; ++j) m = std::max(m, data.logits[static_cast<size_t>(i * 9 + j)]);
    CHECK(s.loss.get(i) == doctest::Approx(s.lse.get(i) - m).epsilon(1e-6));
  }
  sy_ce_backward_args bwd = s.backward_args();
  REQUIRE(ce().backward(&bwd, &err) == SY_OK);
  const CeReference ref = ce_reference(reference_input(p, data, data.grad_loss));
  check_close(s.grad.values(), ref.grad, 1e-5, 1e-7, "grad with unowned labels");
  for (int64_t j = 0; j < 9; ++j) CHECK(s.grad.get(0, j) > 0);  // p only: no -1 anywhere
}

TEST_CASE("in-place backward and in-place grad-in-forward equal their out-of-place results") {
  load_native();
  for (DLDataType dtype : kDtypes) {
    CAPTURE(sy::dtype_name(dtype));
    sy_ce_problem p = make_ce_problem(11, 29, dtype, SY_CE_IGNORE_INDEX | SY_CE_GRAD_IN_FORWARD);
    p.label_smoothing = 0.05f;
    const CeData data = random_ce_data(11, 29, dtype, 11);
    sy_error err = make_error();

    CeSetup out_of_place(p, data);
    sy_ce_forward_args fwd = out_of_place.forward_args();
    REQUIRE(ce().forward(&fwd, &err) == SY_OK);
    CeSetup in_place(p, data);
    sy_ce_forward_args fwd_in_place = in_place.forward_args(/*in_place=*/true);
    REQUIRE_MESSAGE(ce().forward(&fwd_in_place, &err) == SY_OK, err.message);
    CHECK(in_place.logits.same_bits(out_of_place.grad));  // the gradient was written over the logits
    CHECK(in_place.loss.same_bits(out_of_place.loss));
    CHECK(in_place.lse.same_bits(out_of_place.lse));

    CeSetup backward_out(p, data);
    CeSetup backward_in(p, data);
    for (CeSetup* s : {&backward_out, &backward_in}) {
      s->problem.flags = SY_CE_IGNORE_INDEX;
      sy_ce_forward_args f = s->forward_args();
      REQUIRE(ce().forward(&f, &err) == SY_OK);
    }
    sy_ce_backward_args b_out = backward_out.backward_args();
    REQUIRE(ce().backward(&b_out, &err) == SY_OK);
    sy_ce_backward_args b_in = backward_in.backward_args(/*in_place=*/true);
    REQUIRE_MESSAGE(ce().backward(&b_in, &err) == SY_OK, err.message);
    CHECK(backward_in.logits.same_bits(backward_out.grad));
  }
}

TEST_CASE("strided logits rows give the same bits as compact rows") {
  load_native();
  for (DLDataType dtype : kDtypes) {
    CAPTURE(sy::dtype_name(dtype));
    const sy_ce_problem p = make_ce_problem(9, 31, dtype, SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD);
    const CeData data = random_ce_data(9, 31, dtype, 5);
    CeSetup compact(p, data);
    CeSetup strided(p, data, /*row stride=*/40);
    sy_error err = make_error();
    for (CeSetup* s : {&compact, &strided}) {
      sy_ce_forward_args f = s->forward_args();
      REQUIRE_MESSAGE(ce().forward(&f, &err) == SY_OK, err.message);
    }
    CHECK(strided.loss.same_bits(compact.loss));
    CHECK(strided.lse.same_bits(compact.lse));
    CHECK(strided.argmax.same_bits(compact.argmax));
    CHECK(strided.grad.same_bits(compact.grad));
  }
}

TEST_CASE("cross entropy corner cases: one class, no rows, checked labels that are fine") {
  load_native();
  sy_error err = make_error();
  SUBCASE("vocab_size 1: loss 0, lse = z, gradient 0, Megatron smoothing weight 0") {
    sy_ce_problem p = make_ce_problem(3, 1, sy::kF32, SY_CE_GRAD_IN_FORWARD);
    p.label_smoothing = 0.3f;
    CeData data = random_ce_data(3, 1, sy::kF32, 2, false);
    data.labels = {0, 0, 0};
    CeSetup s(p, data);
    sy_ce_forward_args f = s.forward_args();
    REQUIRE_MESSAGE(ce().forward(&f, &err) == SY_OK, err.message);
    for (int64_t i = 0; i < 3; ++i) {
      CHECK(s.loss.get(i) == 0.0);
      CHECK(s.lse.get(i) == doctest::Approx(data.logits[static_cast<size_t>(i)]));
      CHECK(s.grad.get(i, 0) == 0.0);
    }
  }
  SUBCASE("zero rows") {
    const sy_ce_problem p = make_ce_problem(0, 8, sy::kBF16, SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD);
    CeSetup s(p, random_ce_data(0, 8, sy::kBF16, 1));
    sy_ce_forward_args f = s.forward_args();
    CHECK_MESSAGE(ce().forward(&f, &err) == SY_OK, err.message);
    sy_ce_backward_args b = s.backward_args();
    CHECK_MESSAGE(ce().backward(&b, &err) == SY_OK, err.message);
  }
  SUBCASE("SY_CE_CHECK_LABELS accepts in-range labels and ignored rows") {
    const sy_ce_problem p = make_ce_problem(6, 12, sy::kF32, SY_CE_CHECK_LABELS | SY_CE_IGNORE_INDEX);
    CeData data = random_ce_data(6, 12, sy::kF32, 4, false);
    data.labels[2] = -100;
    CeSetup s(p, data);
    sy_ce_forward_args f = s.forward_args();
    CHECK_MESSAGE(ce().forward(&f, &err) == SY_OK, err.message);
    CHECK(s.loss.get(2) == 0.0);
    CHECK(!std::isnan(s.loss.get(5)));
  }
}
