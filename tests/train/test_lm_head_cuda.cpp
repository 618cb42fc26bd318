// The LM head's CUDA kernels against its CPU kernels, on the GPU machine. Exits 77 (skipped)
// where there is no CUDA device or the build has no CUDA. The CUDA kernels sum in the CPU's
// order without FMA contraction, so their outputs are expected to equal the CPU's bit for bit:
// a difference is reported (WARN) with its size, and fails only beyond a tolerance.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <switchyard/lm_head/device.hpp>
#include <switchyard/lm_head/rng.hpp>
#include <switchyard/switchyard.hpp>

#include "cuda/cuda_device.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
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

// A host vector mirrored on the GPU.
template <class T>
class DeviceArray {
 public:
  DeviceArray(const lm::Device& device, const std::vector<T>& host)
      : device_(device), count_(host.size()), memory_(device.allocate(host.size() * sizeof(T))) {
    device.copy_from_host(memory_.get(), host.data(), host.size() * sizeof(T));
  }
  T* get() const { return static_cast<T*>(memory_.get()); }
  std::vector<T> host() const {
    std::vector<T> out(count_);
    device_.copy_to_host(out.data(), memory_.get(), count_ * sizeof(T));
    return out;
  }

 private:
  const lm::Device& device_;
  size_t count_;
  std::shared_ptr<void> memory_;
};

// Largest |a - b| / max(|b|, floor) over the elements, and whether they are bit-identical.
template <class T>
std::pair<double, bool> compare(const std::vector<T>& got, const std::vector<T>& expected,
                                double floor = 1e-6) {
  REQUIRE(got.size() == expected.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - static_cast<double>(expected[i]));
    worst = std::max(worst, diff / std::max(std::fabs(static_cast<double>(expected[i])), floor));
  }
  return {worst, std::memcmp(got.data(), expected.data(), got.size() * sizeof(T)) == 0};
}

#define CHECK_CLOSE_TO_CPU(what, got, expected, tolerance)                                 \
  do {                                                                                     \
    const std::pair<double, bool> result_ = compare(got, expected);                        \
    const double worst = result_.first;                                                    \
    const bool identical = result_.second;                                                 \
    INFO(what << ": largest relative difference to the CPU " << worst);                   \
    WARN_MESSAGE(identical, what << " differs from the CPU (largest relative " << worst  \
                                 << "); expected bit-identical");                         \
    CHECK(worst <= tolerance);                                                             \
  } while (0)

struct Devices {
  std::unique_ptr<lm::Device> cpu = lm::make_cpu_device(2);
  std::unique_ptr<lm::Device> gpu = lm::make_cuda_device(0);
};

}  // namespace

TEST_CASE("cuda device: names, zero-filled memory, copies") {
  Devices d;
  CHECK(d.gpu->name() == "cuda:0");
  CHECK(d.gpu->dl_device().device_type == kDLCUDA);
  CHECK(d.gpu->stream() != nullptr);
  DeviceArray<float> zeros(*d.gpu, std::vector<float>(1000, 0.0f));
  auto memory = d.gpu->allocate(4000);
  std::vector<float> back(1000, 1.0f);
  d.gpu->copy_to_host(back.data(), memory.get(), 4000);
  CHECK(std::all_of(back.begin(), back.end(), [](float v) { return v == 0.0f; }));
  const auto values = random_floats(1000, 9);
  CHECK(DeviceArray<float>(*d.gpu, values).host() == values);
}

TEST_CASE("cuda kernels: the projection and its gradients equal the CPU's") {
  Devices d;
  struct Shape {
    int64_t n, h, vp;
  };
  for (const Shape s : {Shape{7, 5, 600}, Shape{256, 64, 256}, Shape{33, 17, 1000},
                        Shape{64, 64, 16001}, Shape{130, 70, 129}}) {
    INFO("n " << s.n << ", h " << s.h << ", vp " << s.vp);
    const auto y = random_floats(s.n * s.h, 1), w = random_floats(s.h * s.vp, 2, 0.02),
               g = random_floats(s.n * s.vp, 3, 1e-3);
    std::vector<float> logits(s.n * s.vp), dw(s.h * s.vp);
    std::vector<double> dy(s.n * s.h);
    const lm::Kernels& cpu = d.cpu->kernels();
    cpu.project(y.data(), w.data(), s.n, s.h, s.vp, logits.data());
    cpu.project_grad_weight(y.data(), g.data(), s.n, s.h, s.vp, dw.data());
    cpu.project_grad_input(g.data(), w.data(), s.n, s.h, s.vp, dy.data());

    const lm::Kernels& gpu = d.gpu->kernels();
    DeviceArray<float> y_d(*d.gpu, y), w_d(*d.gpu, w), g_d(*d.gpu, g);
    DeviceArray<float> logits_d(*d.gpu, std::vector<float>(logits.size(), -1.0f));
    DeviceArray<float> dw_d(*d.gpu, std::vector<float>(dw.size(), -1.0f));
    DeviceArray<double> dy_d(*d.gpu, std::vector<double>(dy.size(), -1.0));
    gpu.project(y_d.get(), w_d.get(), s.n, s.h, s.vp, logits_d.get());
    gpu.project_grad_weight(y_d.get(), g_d.get(), s.n, s.h, s.vp, dw_d.get());
    gpu.project_grad_input(g_d.get(), w_d.get(), s.n, s.h, s.vp, dy_d.get());
    CHECK_CLOSE_TO_CPU("project", logits_d.host(), logits, 1e-5);
    CHECK_CLOSE_TO_CPU("project_grad_weight", dw_d.host(), dw, 1e-5);
    CHECK_CLOSE_TO_CPU("project_grad_input", dy_d.host(), dy, 1e-10);

    // Deterministic: the same call twice gives the same bits.
    const auto first = logits_d.host();
    gpu.project(y_d.get(), w_d.get(), s.n, s.h, s.vp, logits_d.get());
    CHECK(logits_d.host() == first);
  }
}

TEST_CASE("cuda kernels: gather and the deterministic scatter-add") {
  Devices d;
  const int64_t table_rows = 50, width = 37, n = 3000;
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) {
    // Heavy repeats (a Zipf-like head) and some rows never used.
    ids[i] = static_cast<int64_t>(lm::random_below(5, lm::Stream::BatchPositions, i, 7)) *
             static_cast<int64_t>(lm::random_below(6, lm::Stream::BatchPositions, i, 7));
  }
  const auto table = random_floats(table_rows * width, 4), rows = random_floats(n * width, 5);
  const auto start = random_floats(table_rows * width, 6);  // scatter adds onto this

  std::vector<float> gathered(n * width), grad = start;
  d.cpu->kernels().gather_rows(table.data(), ids.data(), n, width, gathered.data());
  d.cpu->kernels().scatter_add_rows(rows.data(), ids.data(), n, width, grad.data());

  DeviceArray<float> table_d(*d.gpu, table), rows_d(*d.gpu, rows), grad_d(*d.gpu, start);
  DeviceArray<float> gathered_d(*d.gpu, std::vector<float>(n * width));
  DeviceArray<int64_t> ids_d(*d.gpu, ids);
  const lm::Kernels& gpu = d.gpu->kernels();
  gpu.gather_rows(table_d.get(), ids_d.get(), n, width, gathered_d.get());
  CHECK(gathered_d.host() == gathered);
  gpu.scatter_add_rows(rows_d.get(), ids_d.get(), n, width, grad_d.get());
  const auto once = grad_d.host();
  CHECK_CLOSE_TO_CPU("scatter_add_rows", once, grad, 1e-5);

  DeviceArray<float> again(*d.gpu, start);
  gpu.scatter_add_rows(rows_d.get(), ids_d.get(), n, width, again.get());
  CHECK(again.host() == once);  // no float atomics: the same bits every time
}

TEST_CASE("cuda kernels: fill, to_float, mean, SGD and Adam equal the CPU's") {
  Devices d;
  const int64_t count = 100003;
  const auto values = random_floats(count, 7), grads = random_floats(count, 8, 0.1);
  const lm::Kernels& cpu = d.cpu->kernels();
  const lm::Kernels& gpu = d.gpu->kernels();

  DeviceArray<float> values_d(*d.gpu, values);
  CHECK(gpu.mean(values_d.get(), count) ==
        doctest::Approx(cpu.mean(values.data(), count)).epsilon(1e-12));

  std::vector<double> wide(count);
  for (int64_t i = 0; i < count; ++i) wide[i] = values[i] * 1.000000001;
  std::vector<float> narrow(count);
  cpu.to_float(wide.data(), count, narrow.data());
  DeviceArray<double> wide_d(*d.gpu, wide);
  DeviceArray<float> narrow_d(*d.gpu, std::vector<float>(count));
  gpu.to_float(wide_d.get(), count, narrow_d.get());
  CHECK(narrow_d.host() == narrow);

  gpu.fill(narrow_d.get(), count, 0.25f);
  CHECK(narrow_d.host() == std::vector<float>(count, 0.25f));

  std::vector<float> sgd = values;
  cpu.sgd_step(sgd.data(), grads.data(), count, 0.5f);
  DeviceArray<float> sgd_d(*d.gpu, values), grads_d(*d.gpu, grads);
  gpu.sgd_step(sgd_d.get(), grads_d.get(), count, 0.5f);
  CHECK_CLOSE_TO_CPU("sgd_step", sgd_d.host(), sgd, 1e-6);

  std::vector<float> param = values, m(count, 0.0f), v(count, 0.0f);
  DeviceArray<float> param_d(*d.gpu, values), m_d(*d.gpu, m), v_d(*d.gpu, v);
  lm::AdamHyper hyper;
  for (int64_t step = 1; step <= 5; ++step) {
    hyper.step = step;
    cpu.adam_step(param.data(), grads.data(), m.data(), v.data(), count, hyper);
    gpu.adam_step(param_d.get(), grads_d.get(), m_d.get(), v_d.get(), count, hyper);
  }
  CHECK_CLOSE_TO_CPU("adam_step (parameters)", param_d.host(), param, 1e-6);
  CHECK_CLOSE_TO_CPU("adam_step (second moment)", v_d.host(), v, 1e-6);
}

int main(int argc, char** argv) {
  if (!lm::cuda_device_built()) {
    std::printf("SKIP test_lm_head_cuda: this build has no CUDA (no toolkit at configure time)\n");
    return 77;
  }
  int devices = 0;
  const std::string seen = lm::describe_cuda_devices(&devices);
  if (devices < 1) {
    std::printf("SKIP test_lm_head_cuda: %s\n", seen.c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
