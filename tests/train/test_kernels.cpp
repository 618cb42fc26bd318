// The LM head's CPU kernels: values against a float64 reference, gradients against finite
// differences, and the determinism the tensor-parallel equality rests on (results do not
// depend on the thread count, and a vocabulary shard computes exactly the columns the full
// projection computes).
#include <doctest/doctest.h>

#include <switchyard/lm_head/device.hpp>
#include <switchyard/lm_head/rng.hpp>

#include <cmath>
#include <cstring>
#include <vector>

namespace lm = switchyard::lm_head;

namespace {

std::vector<float> random_floats(size_t count, uint64_t seed, double scale = 1.0) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    values[i] = static_cast<float>(scale * lm::random_normal(seed, lm::Stream::Embedding, i));
  }
  return values;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Columns [start, start + width) of a row-major [rows, cols] matrix.
std::vector<float> columns(const std::vector<float>& m, int64_t rows, int64_t cols,
                           int64_t start, int64_t width) {
  std::vector<float> out(static_cast<size_t>(rows * width));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < width; ++j) out[r * width + j] = m[r * cols + start + j];
  }
  return out;
}

// Sizes that exercise partial column blocks (the kernels block by 256 columns).
constexpr int64_t N = 7, H = 5, V = 600;

}  // namespace

TEST_CASE("project and its gradients match a float64 reference") {
  const auto device = lm::make_cpu_device(1);
  const lm::Kernels& k = device->kernels();
  const auto y = random_floats(N * H, 1), w = random_floats(H * V, 2), g = random_floats(N * V, 3);

  std::vector<float> logits(N * V), dw(H * V);
  std::vector<double> dy(N * H);
  k.project(y.data(), w.data(), N, H, V, logits.data());
  k.project_grad_input(g.data(), w.data(), N, H, V, dy.data());
  k.project_grad_weight(y.data(), g.data(), N, H, V, dw.data());

  for (int64_t n = 0; n < N; ++n) {
    for (int64_t j = 0; j < V; ++j) {
      double expected = 0, magnitude = 0;
      for (int64_t h = 0; h < H; ++h) {
        expected += double(y[n * H + h]) * w[h * V + j];
        magnitude += std::fabs(double(y[n * H + h]) * w[h * V + j]);
      }
      CHECK(std::fabs(logits[n * V + j] - expected) <= 1e-6 * magnitude + 1e-30);
    }
    for (int64_t h = 0; h < H; ++h) {
      double expected = 0;
      for (int64_t j = 0; j < V; ++j) expected += double(g[n * V + j]) * w[h * V + j];
      CHECK(dy[n * H + h] == doctest::Approx(expected).epsilon(1e-12));
    }
  }
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t j = 0; j < V; ++j) {
      double expected = 0, magnitude = 0;
      for (int64_t n = 0; n < N; ++n) {
        expected += double(y[n * H + h]) * g[n * V + j];
        magnitude += std::fabs(double(y[n * H + h]) * g[n * V + j]);
      }
      CHECK(std::fabs(dw[h * V + j] - expected) <= 1e-6 * magnitude + 1e-30);
    }
  }
}

TEST_CASE("gradients of the embedding and projection agree with finite differences") {
  // f(E, W) = Σ G ⊙ (E[ids] · W). It is bilinear, so a central difference is exact up to
  // rounding and any transposition or indexing slip in the backward kernels shows up.
  const auto device = lm::make_cpu_device(1);
  const lm::Kernels& k = device->kernels();
  constexpr int64_t kVocab = 9;
  const std::vector<int64_t> ids = {3, 0, 3, 8, 1, 3, 5};  // repeated ids must accumulate
  auto table = random_floats(kVocab * H, 4);
  auto w = random_floats(H * V, 5);
  const auto g = random_floats(N * V, 6);

  auto f = [&](const std::vector<float>& e, const std::vector<float>& proj) {
    double sum = 0;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t j = 0; j < V; ++j) {
        double z = 0;
        for (int64_t h = 0; h < H; ++h) z += double(e[ids[n] * H + h]) * proj[h * V + j];
        sum += double(g[n * V + j]) * z;
      }
    }
    return sum;
  };

  std::vector<float> y(N * H), dw(H * V), dy(N * H), de(kVocab * H, 0.0f);
  std::vector<double> dy64(N * H);
  k.gather_rows(table.data(), ids.data(), N, H, y.data());
  k.project_grad_weight(y.data(), g.data(), N, H, V, dw.data());
  k.project_grad_input(g.data(), w.data(), N, H, V, dy64.data());
  k.to_float(dy64.data(), N * H, dy.data());
  k.scatter_add_rows(dy.data(), ids.data(), N, H, de.data());

  const float step = 0.25f;  // exact in float: the difference quotient has no step error
  for (size_t i : {size_t{0}, size_t{7}, size_t{H * V - 1}, size_t{3 * V + 300}}) {
    auto plus = w, minus = w;
    plus[i] += step;
    minus[i] -= step;
    const double numeric = (f(table, plus) - f(table, minus)) / (2 * step);
    CHECK(dw[i] == doctest::Approx(numeric).epsilon(1e-4));
  }
  for (size_t i = 0; i < table.size(); ++i) {
    auto plus = table, minus = table;
    plus[i] += step;
    minus[i] -= step;
    const double numeric = (f(plus, w) - f(minus, w)) / (2 * step);
    INFO("embedding element " << i);
    CHECK(de[i] == doctest::Approx(numeric).epsilon(1e-4).scale(1e-3));
  }
  // Rows no id points at get no gradient.
  for (int64_t h = 0; h < H; ++h) {
    CHECK(de[2 * H + h] == 0.0f);
    CHECK(de[7 * H + h] == 0.0f);
  }
}

TEST_CASE("kernel results do not depend on the number of threads") {
  // Large enough that the multithreaded paths really split the work.
  constexpr int64_t n = 64, h = 48, v = 3000;
  const auto y = random_floats(n * h, 7), w = random_floats(h * v, 8), g = random_floats(n * v, 9);
  auto run = [&](int threads) {
    const auto device = lm::make_cpu_device(threads);
    const lm::Kernels& k = device->kernels();
    std::vector<float> logits(n * v), dw(h * v);
    std::vector<double> dy(n * h);
    k.project(y.data(), w.data(), n, h, v, logits.data());
    k.project_grad_input(g.data(), w.data(), n, h, v, dy.data());
    k.project_grad_weight(y.data(), g.data(), n, h, v, dw.data());
    std::vector<float> dy_bits(dy.size() * 2);
    std::memcpy(dy_bits.data(), dy.data(), dy.size() * sizeof(double));
    return std::vector<std::vector<float>>{logits, dy_bits, dw};
  };
  const auto one = run(1), three = run(3), eight = run(8);
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(bit_equal(one[i], three[i]));
    CHECK(bit_equal(one[i], eight[i]));
  }
}

TEST_CASE("a vocabulary shard computes exactly the full projection's columns") {
  const auto device = lm::make_cpu_device(2);
  const lm::Kernels& k = device->kernels();
  const auto y = random_floats(N * H, 10), w = random_floats(H * V, 11), g = random_floats(N * V, 12);
  std::vector<float> logits(N * V), dw(H * V);
  k.project(y.data(), w.data(), N, H, V, logits.data());
  k.project_grad_weight(y.data(), g.data(), N, H, V, dw.data());

  // An unequal split whose shard edges fall inside the kernels' column blocks.
  const int64_t start = 123, width = 301;
  const auto w_shard = columns(w, H, V, start, width), g_shard = columns(g, N, V, start, width);
  std::vector<float> logits_shard(N * width), dw_shard(H * width);
  k.project(y.data(), w_shard.data(), N, H, width, logits_shard.data());
  k.project_grad_weight(y.data(), g_shard.data(), N, H, width, dw_shard.data());
  CHECK(bit_equal(logits_shard, columns(logits, N, V, start, width)));
  CHECK(bit_equal(dw_shard, columns(dw, H, V, start, width)));
}

TEST_CASE("SGD and Adam apply the textbook update") {
  const auto device = lm::make_cpu_device(1);
  const lm::Kernels& k = device->kernels();
  std::vector<float> p = {1.0f, -2.0f, 0.5f}, grad = {0.5f, -1.0f, 0.0f};
  k.sgd_step(p.data(), grad.data(), 3, 0.1f);
  CHECK(p[0] == doctest::Approx(0.95));
  CHECK(p[1] == doctest::Approx(-1.9));
  CHECK(p[2] == doctest::Approx(0.5));

  std::vector<float> q = {1.0f, -2.0f}, m = {0, 0}, v = {0, 0};
  const std::vector<float> g1 = {0.5f, -4.0f}, g2 = {0.1f, 2.0f};
  lm::AdamHyper hyper;
  hyper.lr = 0.01f;
  hyper.step = 1;
  k.adam_step(q.data(), g1.data(), m.data(), v.data(), 2, hyper);
  // After one step the bias-corrected update is lr * sign(g) (up to eps).
  CHECK(q[0] == doctest::Approx(0.99).epsilon(1e-6));
  CHECK(q[1] == doctest::Approx(-1.99).epsilon(1e-6));
  hyper.step = 2;
  k.adam_step(q.data(), g2.data(), m.data(), v.data(), 2, hyper);
  for (int i = 0; i < 2; ++i) {
    const double m2 = 0.9 * 0.1 * g1[i] + 0.1 * g2[i];
    const double v2 = 0.999 * 0.001 * g1[i] * g1[i] + 0.001 * g2[i] * g2[i];
    const double update = 0.01 * (m2 / (1 - 0.81)) / (std::sqrt(v2 / (1 - 0.998001)) + 1e-8);
    const double first = i == 0 ? 0.99 : -1.99;
    CHECK(q[i] == doctest::Approx(first - update).epsilon(1e-5));
  }
}
