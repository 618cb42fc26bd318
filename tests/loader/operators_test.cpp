// Bound operators: calls reach the plugin with the bound problem, results are right, errors
// carry the plugin's status and sentence, and one object serves many threads.
#include "loader_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <thread>

using loader_test::fixture;
using loader_test::HostTensor;
using loader_test::isolated_options;
using switchyard::CrossEntropy;
using switchyard::Error;
using switchyard::Norm;
using switchyard::Runtime;

namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

Runtime runtime_for(const std::string& folder, const std::string& ce, const std::string& norm) {
  switchyard::RuntimeOptions options = isolated_options({fixture(folder)});
  options.cross_entropy = ce;
  options.norm = norm;
  return Runtime(options);
}

// Forward tensors for one problem, filled deterministically from `seed`.
struct CeCase {
  CeCase(int64_t rows, int64_t vocab, uint32_t seed)
      : rows(rows), vocab(vocab), logits({rows, vocab}, kF32), labels({rows}, kI64),
        loss({rows}, kF32), lse({rows}, kF32) {
    loader_test::fill_logits(logits, seed);
    loader_test::fill_labels(labels, vocab, seed + 1);
  }
  sy_ce_forward_args args(const sy_ce_problem* problem) {
    sy_ce_forward_args a{};
    a.struct_size = sizeof a;
    a.problem = problem;
    a.logits = logits.dl();
    a.labels = labels.dl();
    a.loss = loss.dl();
    a.lse = lse.dl();
    return a;
  }
  // Largest relative error of the loss against the float64 reference.
  double worst_error() {
    double worst = 0.0;
    for (int64_t i = 0; i < rows; ++i) {
      const double expected = loader_test::reference_loss(logits.as<float>() + i * vocab, vocab,
                                                          labels.as<int64_t>()[i]);
      worst = std::max(worst, std::abs(loss.as<float>()[i] - expected) /
                                  std::max(1e-6, std::abs(expected)));
    }
    return worst;
  }
  int64_t rows, vocab;
  HostTensor logits, labels, loss, lse;
};

}  // namespace

TEST_CASE("forward and backward through a bound CrossEntropy match the float64 reference") {
  const Runtime runtime = runtime_for("cpu_echo", "cpu_echo", "cpu_echo");
  const CrossEntropy ce = runtime.cross_entropy(loader_test::ce_problem(5, 11));
  CHECK(ce.backend().name == "cpu_echo");
  CHECK(ce.backend().version == "0.0.1");
  CHECK(ce.backend().vendor == "switchyard tests");
  CHECK(ce.backend().path == loader_test::fixture_file("cpu_echo", "cpu_echo"));
  CHECK(ce.backend().determinism == SY_DETERMINISTIC);
  CHECK(ce.backend().features == SY_CE_FEATURE_IGNORE_INDEX);
  CHECK(ce.backend().forward_collectives == 0);
  CHECK(ce.backend().requested.value == "cpu_echo");
  CHECK(ce.workspace_size() == 0);
  CHECK(ce.problem().rows == 5);

  CeCase data(5, 11, 7);
  ce.forward(data.args(nullptr));  // NULL problem: the bound one is used
  CHECK(data.worst_error() < 1e-5);

  // Backward: grad = grad_loss * (softmax - onehot); each row sums to zero.
  HostTensor grad_loss({5}, kF32), grad({5, 11}, kF32);
  for (int i = 0; i < 5; ++i) grad_loss.as<float>()[i] = 0.5f;
  sy_ce_backward_args back{};
  back.struct_size = sizeof back;
  back.logits = data.logits.dl();
  back.labels = data.labels.dl();
  back.lse = data.lse.dl();
  back.grad_loss = grad_loss.dl();
  back.grad_logits = grad.dl();
  ce.backward(back);
  for (int64_t i = 0; i < 5; ++i) {
    double row_sum = 0.0;
    for (int64_t j = 0; j < 11; ++j) row_sum += grad.as<float>()[i * 11 + j];
    CHECK(std::abs(row_sum) < 1e-6);
    const int64_t t = data.labels.as<int64_t>()[i];
    const float* z = data.logits.as<float>() + i * 11;
    const double p = std::exp(z[t] - static_cast<double>(data.lse.as<float>()[i]));
    CHECK(grad.as<float>()[i * 11 + t] == doctest::Approx(0.5 * (p - 1.0)).epsilon(1e-5));
  }
}

TEST_CASE("a bound Norm computes RMSNorm") {
  const Runtime runtime = runtime_for("cpu_echo", "cpu_echo", "cpu_echo");
  const Norm norm = runtime.norm(loader_test::rms_problem(3, 8));
  CHECK(norm.backend().name == "cpu_echo");
  HostTensor x({3, 8}, kF32), w({8}, kF32), y({3, 8}, kF32), rstd({3}, kF32);
  loader_test::fill_logits(x, 3);
  for (int j = 0; j < 8; ++j) w.as<float>()[j] = 1.0f + 0.125f * static_cast<float>(j);
  sy_norm_forward_args args{};
  args.struct_size = sizeof args;
  args.x = x.dl();
  args.weight = w.dl();
  args.y = y.dl();
  args.rstd = rstd.dl();
  norm.forward(args);
  for (int i = 0; i < 3; ++i) {
    double squares = 0.0;
    for (int j = 0; j < 8; ++j) squares += std::pow(x.as<float>()[i * 8 + j], 2);
    const double r = 1.0 / std::sqrt(squares / 8 + 1e-5);
    CHECK(rstd.as<float>()[i] == doctest::Approx(r).epsilon(1e-6));
    for (int j = 0; j < 8; ++j)
      CHECK(y.as<float>()[i * 8 + j] ==
            doctest::Approx(x.as<float>()[i * 8 + j] * r * w.as<float>()[j]).epsilon(1e-5));
  }
}

TEST_CASE("plugins built against v1.0 and v1.9 headers work through the host") {
  for (const char* plugin : {"built_v1_0", "built_v1_9"}) {
    INFO(plugin);
    const Runtime runtime = runtime_for("abi_versions", plugin, plugin);
    const CrossEntropy ce = runtime.cross_entropy(loader_test::ce_problem(4, 9));
    CHECK(ce.backend().name == plugin);
    CHECK(ce.backend().forward_collectives == (std::string(plugin) == "built_v1_0" ? -1 : 0));
    CeCase data(4, 9, 11);
    ce.forward(data.args(nullptr));
    CHECK(data.worst_error() < 1e-5);

    const Norm norm = runtime.norm(loader_test::rms_problem(2, 4));
    HostTensor x({2, 4}, kF32), w({4}, kF32), y({2, 4}, kF32), rstd({2}, kF32);
    for (int i = 0; i < 8; ++i) x.as<float>()[i] = static_cast<float>(i + 1);
    for (int j = 0; j < 4; ++j) w.as<float>()[j] = 2.0f;
    sy_norm_forward_args args{};
    args.struct_size = sizeof args;
    args.x = x.dl();
    args.weight = w.dl();
    args.y = y.dl();
    args.rstd = rstd.dl();
    norm.forward(args);
    // Row 0 = {1,2,3,4}: mean square 7.5.
    CHECK(y.as<float>()[0] == doctest::Approx(2.0 / std::sqrt(7.5 + 1e-5)).epsilon(1e-5));
  }
}

TEST_CASE("an exception inside the plugin comes back as SY_ERR_INTERNAL with its what()") {
  const Runtime runtime = runtime_for("faults", "throws_forward", "throws_forward");
  const CrossEntropy ce = runtime.cross_entropy(loader_test::ce_problem(2, 3));
  CeCase data(2, 3, 1);
  sy_error err{sizeof(sy_error), SY_OK, {}};
  CHECK(ce.forward(data.args(nullptr), &err) == SY_ERR_INTERNAL);
  CHECK(err.status == SY_ERR_INTERNAL);
  CHECK(std::string(err.message).find("deliberate failure from throws_forward: the forward pass "
                                      "blew up") != std::string::npos);
  try {
    ce.forward(data.args(nullptr));
    FAIL("forward did not throw");
  } catch (const Error& e) {
    CHECK(e.status() == SY_ERR_INTERNAL);
    const std::string what = e.what();
    CHECK(what.find("cross_entropy forward (backend 'throws_forward')") != std::string::npos);
    CHECK(what.find("the forward pass blew up") != std::string::npos);
  }
  CHECK(ce.forward(data.args(nullptr), nullptr) == SY_ERR_INTERNAL);  // err may be NULL
}

TEST_CASE("binding refuses what the plugin's supports() refuses, with its reason") {
  const Runtime runtime = runtime_for("cpu_echo", "cpu_echo", "cpu_echo");
  sy_ce_problem tp = loader_test::ce_problem(2, 8);
  tp.tp_size = 2;
  tp.vocab_local = 4;
  try {
    (void)runtime.cross_entropy(tp);
    FAIL("cross_entropy() accepted tp_size 2");
  } catch (const Error& e) {
    CHECK(e.status() == SY_ERR_UNSUPPORTED);
    const std::string what = e.what();
    CHECK(what.find("backend 'cpu_echo' cannot serve this problem") != std::string::npos);
    CHECK(what.find("tp_size is 2, this fixture supports only 1") != std::string::npos);
  }
  sy_norm_problem layer = loader_test::rms_problem(2, 4);
  layer.kind = SY_NORM_LAYER;
  CHECK_THROWS_WITH_AS(runtime.norm(layer), doctest::Contains("only RMSNorm"), Error);

  sy_ce_problem unsized = loader_test::ce_problem(2, 8);
  unsized.struct_size = 0;
  try {
    (void)runtime.cross_entropy(unsized);
    FAIL("cross_entropy() accepted struct_size 0");
  } catch (const Error& e) {
    CHECK(e.status() == SY_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("sy_ce_problem.struct_size is 0") != std::string::npos);
  }
}

TEST_CASE("the plugin's argument errors reach the caller unchanged") {
  const Runtime runtime = runtime_for("cpu_echo", "cpu_echo", "cpu_echo");
  const CrossEntropy ce = runtime.cross_entropy(loader_test::ce_problem(4, 6));
  CeCase wrong(3, 6, 2);  // 3 rows where the bound problem says 4
  sy_error err{sizeof(sy_error), SY_OK, {}};
  CHECK(ce.forward(wrong.args(nullptr), &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(err.message) == "logits has shape [3, 6], expected [4, 6]");

  sy_ce_forward_args unsized = wrong.args(nullptr);
  unsized.struct_size = 0;
  CHECK(ce.forward(unsized, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(err.message).find("args.struct_size is 0") != std::string::npos);
}

TEST_CASE("an operator keeps its plugin loaded after the Runtime is gone") {
  std::optional<CrossEntropy> ce;
  {
    const Runtime runtime = runtime_for("cpu_echo", "cpu_echo", "cpu_echo");
    ce.emplace(runtime.cross_entropy(loader_test::ce_problem(3, 5)));
  }
  CeCase data(3, 5, 9);
  ce->forward(data.args(nullptr));
  CHECK(data.worst_error() < 1e-5);
}

TEST_CASE("8 threads x 1000 forward calls on one bound CrossEntropy are all correct") {
  const Runtime runtime = runtime_for("cpu_echo", "cpu_echo", "cpu_echo");
  const CrossEntropy ce = runtime.cross_entropy(loader_test::ce_problem(4, 16));
  constexpr int kThreads = 8, kCalls = 1000;
  std::atomic<int> failures{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CeCase data(4, 16, 100 + static_cast<uint32_t>(t));  // each thread its own tensors
      std::vector<float> expected(4);
      for (int64_t i = 0; i < 4; ++i)
        expected[i] = static_cast<float>(loader_test::reference_loss(
            data.logits.as<float>() + i * 16, 16, data.labels.as<int64_t>()[i]));
      for (int call = 0; call < kCalls; ++call) {
        std::fill(data.loss.as<float>(), data.loss.as<float>() + 4, -1.0f);
        sy_error err{sizeof(sy_error), SY_OK, {}};
        if (ce.forward(data.args(nullptr), &err) != SY_OK) {
          ++failures;
          continue;
        }
        for (int64_t i = 0; i < 4; ++i) {
          if (std::abs(data.loss.as<float>()[i] - expected[i]) > 1e-5f * std::abs(expected[i]) + 1e-6f)
            ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(failures.load() == 0);
  CHECK(wrong.load() == 0);
}
