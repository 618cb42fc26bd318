// DETERMINISTIC means it: results are bit-identical for 1, 2 and 7 threads (the plugin option
// native.threads), and a row's results do not depend on the other rows of the batch.
#include "ce_harness.hpp"
#include "norm_harness.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <memory>

using namespace native_test;

namespace {

const int kThreadCounts[] = {1, 2, 7};

bool logged(const std::string& fragment) {
  const std::vector<std::string> lines = host_log();
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(fragment) != std::string::npos; });
}

struct CeResult {
  std::unique_ptr<CeSetup> forward, backward;
};

CeResult run_ce(const sy_ce_problem& p, const CeData& data) {
  CeResult r;
  sy_error err = make_error();
  r.forward = std::make_unique<CeSetup>(p, data);
  sy_ce_forward_args f = r.forward->forward_args();
  REQUIRE_MESSAGE(ce().forward(&f, &err) == SY_OK, err.message);
  sy_ce_problem plain = p;
  plain.flags &= ~uint32_t{SY_CE_GRAD_IN_FORWARD};
  r.backward = std::make_unique<CeSetup>(plain, data);
  sy_ce_forward_args g = r.backward->forward_args();
  REQUIRE(ce().forward(&g, &err) == SY_OK);
  sy_ce_backward_args b = r.backward->backward_args();
  REQUIRE_MESSAGE(ce().backward(&b, &err) == SY_OK, err.message);
  return r;
}

std::unique_ptr<NormSetup> run_norm(const sy_norm_problem& p, const NormData& data) {
  auto s = std::make_unique<NormSetup>(p, data);
  sy_error err = make_error();
  sy_norm_forward_args f = s->forward_args();
  REQUIRE_MESSAGE(norm().forward(&f, &err) == SY_OK, err.message);
  sy_norm_backward_args b = s->backward_args();
  REQUIRE_MESSAGE(norm().backward(&b, &err) == SY_OK, err.message);
  return s;
}

// Rows [begin, end) of data as a batch of their own.
NormData norm_rows(const NormData& d, int64_t begin, int64_t end) {
  NormData out = d;
  out.rows = end - begin;
  auto slice = [&](const std::vector<double>& v) {
    return std::vector<double>(v.begin() + begin * d.hidden, v.begin() + end * d.hidden);
  };
  out.x = slice(d.x);
  out.residual = slice(d.residual);
  out.dy = slice(d.dy);
  out.d_residual_out = slice(d.d_residual_out);
  return out;
}

bool rows_equal(const Tensor& part, const Tensor& whole, int64_t offset) {
  for (int64_t i = 0; i < part.rows(); ++i)
    for (int64_t j = 0; j < part.cols(); ++j) {
      const double a = part.get(i, j), b = whole.get(offset + i, j);
      if (!(a == b) && !(std::isnan(a) && std::isnan(b))) return false;
      if (std::signbit(a) != std::signbit(b)) return false;
    }
  return true;
}

}  // namespace

TEST_CASE("the threads option is read at entry") {
  clear_host_log();
  REQUIRE(load_native(7) != nullptr);
  CHECK(logged("with 7 threads"));
  clear_host_log();
  REQUIRE(load_native("auto") != nullptr);
  CHECK(logged("threads"));
  load_native();
}

TEST_CASE("cross entropy is bit-exact for 1, 2 and 7 threads") {
  sy_ce_problem p = make_ce_problem(64, 4096, sy::kBF16,
                                    SY_CE_IGNORE_INDEX | SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD);
  p.label_smoothing = 0.1f;
  p.grad_dtype = sy::kF32;
  const CeData data = random_ce_data(64, 4096, sy::kBF16, 99);
  std::vector<CeResult> results;
  for (int threads : kThreadCounts) {
    REQUIRE(load_native(threads) != nullptr);
    results.push_back(run_ce(p, data));
  }
  load_native();
  for (size_t k = 1; k < results.size(); ++k) {
    CAPTURE(kThreadCounts[k]);
    CHECK(results[k].forward->loss.same_bits(results[0].forward->loss));
    CHECK(results[k].forward->lse.same_bits(results[0].forward->lse));
    CHECK(results[k].forward->argmax.same_bits(results[0].forward->argmax));
    CHECK(results[k].forward->grad.same_bits(results[0].forward->grad));
    CHECK(results[k].backward->grad.same_bits(results[0].backward->grad));
  }
}

TEST_CASE("normalization is bit-exact for 1, 2 and 7 threads, dgamma and dbeta included") {
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS}) {
    CAPTURE(kind);
    sy_norm_problem p = make_norm_problem(kind, 256, 1024, sy::kBF16, SY_NORM_RESIDUAL);
    const NormData data = random_norm_data(p, 42);
    std::vector<std::unique_ptr<NormSetup>> results;
    for (int threads : kThreadCounts) {
      REQUIRE(load_native(threads) != nullptr);
      results.push_back(run_norm(p, data));
    }
    load_native();
    for (size_t k = 1; k < results.size(); ++k) {
      CAPTURE(kThreadCounts[k]);
      CHECK(results[k]->y.same_bits(results[0]->y));
      CHECK(results[k]->rstd.same_bits(results[0]->rstd));
      CHECK(results[k]->mean.same_bits(results[0]->mean));
      CHECK(results[k]->residual_out.same_bits(results[0]->residual_out));
      CHECK(results[k]->dx.same_bits(results[0]->dx));
      CHECK(results[k]->dweight.same_bits(results[0]->dweight));
      if (kind == SY_NORM_LAYER) CHECK(results[k]->dbias.same_bits(results[0]->dbias));
    }
  }
}

TEST_CASE("normalization rows do not depend on the rest of the batch") {
  REQUIRE(load_native(7) != nullptr);
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2}) {
    CAPTURE(kind);
    const sy_norm_problem whole_problem = make_norm_problem(kind, 300, 1024, sy::kBF16, SY_NORM_RESIDUAL);
    const NormData data = random_norm_data(whole_problem, 7);
    const std::unique_ptr<NormSetup> whole = run_norm(whole_problem, data);
    const int64_t cuts[][2] = {{0, 1}, {1, 11}, {11, 300}, {137, 138}};
    for (const auto& cut : cuts) {
      CAPTURE(cut[0]);
      CAPTURE(cut[1]);
      sy_norm_problem part_problem = whole_problem;
      part_problem.rows = cut[1] - cut[0];
      const std::unique_ptr<NormSetup> part = run_norm(part_problem, norm_rows(data, cut[0], cut[1]));
      CHECK(rows_equal(part->y, whole->y, cut[0]));
      CHECK(rows_equal(part->rstd, whole->rstd, cut[0]));
      if (kind == SY_NORM_LAYER) CHECK(rows_equal(part->mean, whole->mean, cut[0]));
      CHECK(rows_equal(part->residual_out, whole->residual_out, cut[0]));
      CHECK(rows_equal(part->dx, whole->dx, cut[0]));
    }
  }
  load_native();
}

TEST_CASE("cross-entropy rows do not depend on the rest of the batch") {
  REQUIRE(load_native(7) != nullptr);
  sy_ce_problem p = make_ce_problem(64, 4096, sy::kF16, SY_CE_ARGMAX | SY_CE_GRAD_IN_FORWARD);
  p.label_smoothing = 0.2f;
  p.smoothing = SY_SMOOTHING_PYTORCH;
  const CeData data = random_ce_data(64, 4096, sy::kF16, 5);
  const CeResult whole = run_ce(p, data);
  CeData part = data;
  const int64_t begin = 9, end = 20;
  part.rows = end - begin;
  part.logits.assign(data.logits.begin() + begin * 4096, data.logits.begin() + end * 4096);
  part.labels.assign(data.labels.begin() + begin, data.labels.begin() + end);
  part.grad_scale.assign(data.grad_scale.begin() + begin, data.grad_scale.begin() + end);
  part.grad_loss.assign(data.grad_loss.begin() + begin, data.grad_loss.begin() + end);
  sy_ce_problem q = p;
  q.rows = part.rows;
  const CeResult sub = run_ce(q, part);
  CHECK(rows_equal(sub.forward->loss, whole.forward->loss, begin));
  CHECK(rows_equal(sub.forward->lse, whole.forward->lse, begin));
  CHECK(rows_equal(sub.forward->argmax, whole.forward->argmax, begin));
  CHECK(rows_equal(sub.forward->grad, whole.forward->grad, begin));
  CHECK(rows_equal(sub.backward->grad, whole.backward->grad, begin));
  load_native();
}

TEST_CASE("after fork(), a child can load, compute and exit although the pool's threads stay behind") {
  // The core lists plugins in forked children; a user process may fork too. The parent's
  // workers do not exist in the child: the plugin must neither wait for them nor join them.
  REQUIRE(load_native(3) != nullptr);
  sy_ce_problem p = make_ce_problem(64, 4096, sy::kF32, SY_CE_ARGMAX);
  const CeData data = random_ce_data(64, 4096, sy::kF32, 8);
  const CeResult parent = run_ce(p, data);  // starts the workers in this process
  for (bool compute : {false, true}) {
    CAPTURE(compute);
    std::fflush(nullptr);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::alarm(30);  // a hang becomes SIGALRM, not a stuck test
      int code = load_native(3) != nullptr ? 0 : 2;
      if (code == 0 && compute) {
        CeSetup s(p, data);
        sy_error err = make_error();
        sy_ce_forward_args f = s.forward_args();
        code = ce().forward(&f, &err) != SY_OK ? 3
               : !s.loss.same_bits(parent.forward->loss) ? 4
                                                          : 0;
      }
      std::exit(code);  // runs static destructors, the pool's included
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    INFO("child status " << status);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  load_native();
}
