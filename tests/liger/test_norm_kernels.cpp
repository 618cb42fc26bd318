// liger's norm kernels (plugins/liger/kernels/norm_dispatch.cuh and the kernels it picks)
// executed by the block emulator and checked against the conformance suite's float64 reference
// with its tolerances: LayerNorm/RMSNorm/L2Norm, every flag, dtype mixes, hidden sizes that give
// one, several and partial chunks per thread, more than one backward block, strided and
// unaligned rows (bit-identical), in-place dx, the llama casting mode, and the ring kernels
// (rows through shared memory by emulated bulk copies) bit-identical to the register kernels.
#include "kernels/norm_dispatch.cuh"
#include "kernels/norm_geometry.hpp"

#include "block_emulator.hpp"
#include "host_matrix.hpp"

#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_norm.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace {

namespace cf = switchyard::conformance;
namespace lg = switchyard::liger;
using liger_test::HostMatrix;
using lg::Dt;

const char* dt_name(Dt d) { return d == Dt::F32 ? "f32" : d == Dt::BF16 ? "bf16" : "f16"; }
DLDataType dl_of(Dt d) {
  return d == Dt::F32 ? DLDataType{kDLFloat, 32, 1}
                      : d == Dt::BF16 ? DLDataType{kDLBfloat, 16, 1} : DLDataType{kDLFloat, 16, 1};
}

class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed * 6364136223846793005ull + 1442695040888963407ull) {}
  double uniform(double low, double high) {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return low + (high - low) * static_cast<double>((state_ >> 11) % (1ull << 40)) /
                     double(1ull << 40);
  }
  double nonzero(double low, double high) {
    const double m = uniform(low, high);
    return uniform(0, 1) < 0.5 ? -m : m;
  }

 private:
  uint64_t state_;
};

struct NormCase {
  sy_norm_kind kind = SY_NORM_RMS;
  Dt x = Dt::BF16, y = Dt::BF16, w = Dt::BF16, gw = Dt::BF16;
  int64_t rows = 5;
  int64_t hidden = 127;
  uint32_t flags = 0;
  bool bias = true;
  bool llama = false;
  bool dx_over_dy = false;
  int64_t pad = 0;
  int64_t misalign = 0;
  // SMs the ring kernels size their grid for (1: few blocks, each walking many rows through
  // its ring); 0 keeps every launch on the register kernels.
  int sm_count = 1;
  // Rows per dgamma/dbeta partial; 0: the plugin's rule (norm_rows_per_block), which picks 64
  // only for more rows than the emulator has time for.
  int rows_per_block = 0;
  uint64_t seed = 3;

  bool layer() const { return kind == SY_NORM_LAYER; }
  bool gamma() const { return kind != SY_NORM_L2; }
  bool beta() const { return layer() && bias; }
  bool has(uint32_t f) const { return (flags & f) != 0; }
  std::string describe() const {
    static const char* kinds[] = {"LayerNorm", "RMSNorm", "L2Norm"};
    return std::string(kinds[kind]) + " x=" + dt_name(x) + " y=" + dt_name(y) + " w=" +
           dt_name(w) + " gw=" + dt_name(gw) + " N=" + std::to_string(rows) +
           " H=" + std::to_string(hidden) + " flags=" + std::to_string(flags) +
           (bias ? "" : " no-bias") + (llama ? " llama" : "") + (dx_over_dy ? " dx=dy" : "") +
           " pad=" + std::to_string(pad) + " misalign=" + std::to_string(misalign) +
           " sm_count=" + std::to_string(sm_count) +
           " rows_per_block=" + std::to_string(rows_per_block);
  }
};

struct NormData {
  std::vector<double> x, residual, gamma, beta, dy, d_residual_out, dgamma0, dbeta0;
};

std::vector<double> random_values(Random& random, int64_t count, double offset, double low,
                                  double high, Dt dtype) {
  std::vector<double> v(static_cast<size_t>(count));
  for (auto& value : v) value = liger_test::round_to(dtype, offset + random.nonzero(low, high));
  return v;
}

NormData make_data(const NormCase& c) {
  Random random(c.seed);
  NormData d;
  const int64_t h = c.hidden;
  for (int64_t i = 0; i < c.rows; ++i) {
    const auto row = random_values(random, h, i % 3 == 2 ? 3.0 : 0.0, 0.05, 2.0, c.x);
    d.x.insert(d.x.end(), row.begin(), row.end());
  }
  if (c.has(SY_NORM_RESIDUAL)) {
    d.residual = random_values(random, c.rows * h, 0, 0.05, 1.0, c.x);
    d.d_residual_out = random_values(random, c.rows * h, 0, 0.05, 1.0, c.x);
  }
  if (c.gamma())
    d.gamma = random_values(random, h, c.has(SY_NORM_ZERO_CENTERED_GAMMA) ? 0.0 : 1.0, 0.05, 0.5,
                            c.w);
  if (c.beta()) d.beta = random_values(random, h, 0, 0.05, 0.5, c.w);
  d.dy = random_values(random, c.rows * h, 0, 0.05, 1.0, c.y);
  if (c.has(SY_NORM_ACCUMULATE_GRAD_WEIGHT)) {
    d.dgamma0 = random_values(random, h, 0, 0.05, 2.0, c.gw);
    d.dbeta0 = random_values(random, h, 0, 0.05, 2.0, c.gw);
  }
  return d;
}

void expect_close(const std::string& what, const std::vector<double>& got,
                  const std::vector<double>& expected, const cf::Tolerance& tolerance,
                  int64_t columns = 0, const std::vector<double>* scale = nullptr) {
  if (const auto m = cf::find_mismatch(got, expected, tolerance, scale))
    FAIL_CHECK(cf::describe_mismatch(what, *m, columns));
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

std::vector<double> rounded(const std::vector<double>& v, Dt dtype) {
  std::vector<double> out;
  for (double x : v) out.push_back(liger_test::round_to(dtype, x));
  return out;
}

HostMatrix matrix(const NormCase& c, Dt dtype, const std::vector<double>* values) {
  HostMatrix m(dtype, c.rows, c.hidden, c.pad ? c.hidden + c.pad : 0, c.misalign);
  if (values != nullptr) m.fill(*values);
  return m;
}

HostMatrix vector_of(Dt dtype, const std::vector<double>& values) {
  HostMatrix m(dtype, 1, static_cast<int64_t>(values.size()));
  m.fill(values);
  return m;
}

std::vector<float> floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }
std::vector<double> doubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

struct NormOutputs {
  std::vector<double> y, residual_out, mean, rstd, dx, dgamma, dbeta;
  // Whether the forward / backward launched a ring kernel (the only ones with dynamic shared
  // memory on H <= 8192).
  bool forward_ring = false, backward_ring = false;
};

// The emulator's launch, noting the dynamic shared memory the kernel asked for.
struct NotingLaunch {
  std::size_t* shared;
  template <class... Params, class... Args>
  void operator()(unsigned blocks, int threads, std::size_t shared_bytes,
                  void (*kernel)(Params...), Args&&... args) const {
    *shared = shared_bytes;
    liger_emu::Launch{}(blocks, threads, shared_bytes, kernel, std::forward<Args>(args)...);
  }
};

// Forward and backward of one case; backward from the reference's h/y and statistics, as the
// conformance suite does. Checks everything against the reference; returns the outputs.
NormOutputs run_case(const NormCase& c) {
  CAPTURE(c.describe());
  const NormData d = make_data(c);
  const bool residual = c.has(SY_NORM_RESIDUAL);
  const bool memory_efficient = c.has(SY_NORM_MEMORY_EFFICIENT);
  const bool accumulate = c.has(SY_NORM_ACCUMULATE_GRAD_WEIGHT);
  const int64_t n = c.rows, h = c.hidden;

  cf::NormReferenceProblem rp;
  rp.kind = c.kind;
  rp.rows = n;
  rp.hidden = h;
  rp.eps = static_cast<double>(1e-5f);
  rp.flags = c.flags;
  cf::NormReferenceForwardInput fin;
  fin.x = d.x;
  fin.residual = d.residual;
  fin.gamma = d.gamma;
  fin.beta = d.beta;
  const Dt x_dt = c.x;
  fin.round_to_x_dtype = [x_dt](double v) { return liger_test::round_to(x_dt, v); };
  const auto ref = cf::reference_norm_forward(rp, fin);

  // ---- forward ----
  HostMatrix x = matrix(c, c.x, &d.x);
  HostMatrix res = matrix(c, c.x, residual ? &d.residual : nullptr);
  HostMatrix res_out = matrix(c, c.x, nullptr);
  HostMatrix y = matrix(c, c.y, nullptr);
  HostMatrix gamma = vector_of(c.w, c.gamma() ? d.gamma : std::vector<double>{});
  HostMatrix beta = vector_of(c.w, c.beta() ? d.beta : std::vector<double>{});
  std::vector<float> mean(n, std::numeric_limits<float>::quiet_NaN()), rstd = mean;
  lg::NormForwardArgs f;
  f.kind = static_cast<lg::NormKind>(c.kind);
  f.rows = n;
  f.hidden = h;
  f.eps = 1e-5f;
  f.zero_centered = c.has(SY_NORM_ZERO_CENTERED_GAMMA);
  f.llama = c.llama;
  f.x = x.data();
  f.x_stride = x.stride();
  f.x_dt = c.x;
  if (residual) {
    f.residual = res.data();
    f.residual_stride = res.stride();
    f.residual_out = res_out.data();
    f.residual_out_stride = res_out.stride();
  }
  f.weight = c.gamma() ? gamma.data() : nullptr;
  f.bias = c.beta() ? beta.data() : nullptr;
  f.w_dt = c.w;
  f.y = y.data();
  f.y_stride = y.stride();
  f.y_dt = c.y;
  f.mean = c.layer() ? mean.data() : nullptr;
  f.rstd = rstd.data();
  f.aligned = x.aligned() && res.aligned() && res_out.aligned() && y.aligned() &&
              gamma.aligned() && beta.aligned();
  f.threads = lg::norm_forward_threads(h);
  f.sm_count = c.sm_count;
  std::size_t forward_shared = 0;
  lg::dispatch_norm_forward(NotingLaunch{&forward_shared}, f);

  NormOutputs out;
  out.forward_ring = h <= 16384 && forward_shared > 0;
  out.y = y.values();
  out.rstd = doubles(rstd);
  const bool exact_y = !(c.llama && c.kind == SY_NORM_RMS && c.x != c.y);
  if (exact_y)
    expect_close("y", out.y, ref.y, cf::elementwise_tolerance(dl_of(c.y), max_abs(ref.y)), h,
                 &ref.y_magnitude);
  if (residual) {
    out.residual_out = res_out.values();
    expect_close("residual_out", out.residual_out, ref.h,
                 cf::elementwise_tolerance(dl_of(c.x), max_abs(ref.h)), h, &ref.h_magnitude);
  }
  if (c.layer()) {
    out.mean = doubles(mean);
    std::vector<double> mean_scale(static_cast<size_t>(n), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < h; ++j) mean_scale[i] += std::fabs(ref.h[i * h + j]);
      mean_scale[i] /= static_cast<double>(h);
    }
    expect_close("mean", out.mean, ref.mean, cf::statistic_tolerance(dl_of(c.x), 0), 0,
                 &mean_scale);
  }
  expect_close("rstd", out.rstd, ref.rstd, cf::statistic_tolerance(dl_of(c.x), max_abs(ref.rstd)));
  CHECK(x.values() == d.x);

  // ---- backward ----
  const std::vector<double> x_or_y_values = memory_efficient ? rounded(ref.y, c.y) : ref.h;
  const std::vector<double> mean_in = rounded(ref.mean, Dt::F32),
                            rstd_in = rounded(ref.rstd, Dt::F32);
  HostMatrix dy = matrix(c, c.y, &d.dy);
  HostMatrix x_or_y = matrix(c, memory_efficient ? c.y : c.x, &x_or_y_values);
  HostMatrix d_res = matrix(c, c.x, residual ? &d.d_residual_out : nullptr);
  HostMatrix dx_separate = matrix(c, c.x, nullptr);
  HostMatrix& dx = c.dx_over_dy ? dy : dx_separate;
  const int rows_per_block =
      c.rows_per_block > 0 ? c.rows_per_block : lg::norm_rows_per_block(n, h);
  const int64_t blocks = lg::norm_backward_blocks(n, rows_per_block);
  std::vector<float> partial_g(static_cast<size_t>(blocks * h),
                               std::numeric_limits<float>::quiet_NaN());
  std::vector<float> partial_b = partial_g;
  HostMatrix dgamma = vector_of(c.gw, accumulate ? d.dgamma0 : std::vector<double>(h, -999.0));
  HostMatrix dbeta = vector_of(c.gw, accumulate ? d.dbeta0 : std::vector<double>(h, -999.0));
  std::vector<float> mean_f = floats(mean_in), rstd_f = floats(rstd_in);
  lg::NormBackwardArgs b;
  b.kind = f.kind;
  b.rows = n;
  b.hidden = h;
  b.zero_centered = f.zero_centered;
  b.memory_efficient = memory_efficient;
  b.llama = c.llama;
  b.dy = dy.data();
  b.dy_stride = dy.stride();
  b.y_dt = c.y;
  b.x_or_y = x_or_y.data();
  b.x_or_y_stride = x_or_y.stride();
  b.x_or_y_dt = memory_efficient ? c.y : c.x;
  b.weight = f.weight;
  b.bias = f.bias;
  b.w_dt = c.w;
  b.mean = c.layer() ? mean_f.data() : nullptr;
  b.rstd = rstd_f.data();
  b.d_residual_out = residual ? d_res.data() : nullptr;
  b.d_residual_out_stride = d_res.stride();
  b.dx = dx.data();
  b.dx_stride = dx.stride();
  b.x_dt = c.x;
  b.rows_per_block = rows_per_block;
  b.dweight_partial = c.gamma() ? partial_g.data() : nullptr;
  b.dbias_partial = c.layer() ? partial_b.data() : nullptr;
  b.aligned = dy.aligned() && x_or_y.aligned() && d_res.aligned() && dx.aligned() &&
              gamma.aligned() && beta.aligned();
  b.threads = lg::norm_backward_threads(
      h, lg::norm_backward_four_chunks(b.kind, memory_efficient, b.y_dt, b.x_or_y_dt, b.x_dt));
  b.sm_count = c.sm_count;
  std::size_t backward_shared = 0;
  lg::dispatch_norm_backward(NotingLaunch{&backward_shared}, b);
  out.backward_ring = h <= 8192 && backward_shared > 0;
  if (c.gamma())
    lg::dispatch_norm_weight_grad(liger_emu::Launch{}, partial_g.data(), blocks, h,
                                  dgamma.data(), c.gw, accumulate);
  if (c.layer())
    lg::dispatch_norm_weight_grad(liger_emu::Launch{}, partial_b.data(), blocks, h,
                                  dbeta.data(), c.gw, accumulate);

  cf::NormReferenceBackwardInput bin;
  bin.dy = d.dy;
  bin.x_or_y = x_or_y_values;
  bin.gamma = d.gamma;
  bin.beta = d.beta;
  bin.mean = mean_in;
  bin.rstd = rstd_in;
  bin.d_residual_out = d.d_residual_out;
  bin.dgamma_initial = d.dgamma0;
  bin.dbeta_initial = d.dbeta0;
  const auto grads = cf::reference_norm_backward(rp, bin);
  out.dx = dx.values();
  expect_close("dx", out.dx, grads.dx, cf::elementwise_tolerance(dl_of(c.x), max_abs(grads.dx)),
               h, &grads.dx_magnitude);
  if (c.gamma()) {
    out.dgamma = dgamma.values();
    expect_close("dweight", out.dgamma, grads.dgamma, cf::row_sum_tolerance(dl_of(c.x)), 0,
                 &grads.dgamma_scale);
  }
  if (c.beta()) {
    out.dbeta = dbeta.values();
    expect_close("dbias", out.dbeta, grads.dbeta, cf::row_sum_tolerance(dl_of(c.x)), 0,
                 &grads.dbeta_scale);
  }
  if (c.layer() && !c.bias) {  // dbias without beta: the sum of dy over rows
    out.dbeta = dbeta.values();
    for (int64_t j = 0; j < h; ++j) {
      double sum = accumulate ? d.dbeta0[j] : 0.0;
      double scale = accumulate ? std::fabs(d.dbeta0[j]) : 0.0;
      for (int64_t i = 0; i < n; ++i) {
        sum += d.dy[i * h + j];
        scale += std::fabs(d.dy[i * h + j]);
      }
      CAPTURE(j);
      CHECK(std::fabs(out.dbeta[j] - sum) <= cf::row_sum_tolerance(dl_of(c.x)).rtol * scale);
    }
  }
  return out;
}

// Every output of a and b has the same bits.
void check_same_bits(const NormOutputs& a, const NormOutputs& b) {
  CHECK(a.y == b.y);
  CHECK(a.residual_out == b.residual_out);
  CHECK(a.rstd == b.rstd);
  CHECK(a.mean == b.mean);
  CHECK(a.dx == b.dx);
  CHECK(a.dgamma == b.dgamma);
  CHECK(a.dbeta == b.dbeta);
}

// Runs c (sm_count > 0: the ring kernels where they apply) and again on the register kernels
// (sm_count 0), checks that every output has the same bits, and returns the first run's
// outputs (which kernels ran).
NormOutputs check_same_bits_as_registers(NormCase c) {
  const NormOutputs ring = run_case(c);
  c.sm_count = 0;
  const NormOutputs registers = run_case(c);
  CHECK_FALSE(registers.forward_ring);
  CHECK_FALSE(registers.backward_ring);
  check_same_bits(ring, registers);
  return ring;
}

NormCase make(sy_norm_kind kind, Dt dtype, int64_t rows, int64_t hidden, uint32_t flags = 0) {
  NormCase c;
  c.kind = kind;
  c.x = c.y = c.w = c.gw = dtype;
  c.rows = rows;
  c.hidden = hidden;
  c.flags = flags;
  if ((flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0) c.gw = Dt::F32;
  return c;
}

constexpr sy_norm_kind kKinds[] = {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2};

}  // namespace

TEST_CASE("norms: kinds x dtypes x hidden sizes (1, 127, 4096 and 8200: 1 to 3 chunks a thread)") {
  for (sy_norm_kind kind : kKinds)
    for (Dt dtype : {Dt::F32, Dt::BF16, Dt::F16})
      for (int64_t hidden : {1, 127, 4096, 8200})
        run_case(make(kind, dtype, hidden > 1000 ? 3 : 5, hidden));
}

TEST_CASE("norms: every kernel path (register forward with 1, 2 and 4 chunks a thread and the "
          "re-reading one; register backward of 1, 2 and 4 chunks a thread, one dtype or mixed, "
          "and the shared-memory one)") {
  // H -> forward chunks a thread / backward path: 520 -> 3 (the K = 4 kernel with idle chunk
  // slots) / 64 threads x 2 chunks (LayerNorm bf16/f16: 32 threads x 3, the K = 4 kernel with an
  // idle slot); 4104 -> 4 (160 threads, idle slots) / 288 threads x 2 chunks (LayerNorm 16-bit:
  // 160 x 4); 8192 -> 4 (256 threads) / 512 threads x 2 chunks (LayerNorm 16-bit: 256 x 4); 8200
  // -> 4 / shared memory; 16392 -> the re-reading forward. Aligned 16-bit rows run on the ring
  // kernels, the others (float32 x, gamma of another dtype) on the register ones.
  CHECK(lg::norm_forward_threads(4096) == 128);
  CHECK(lg::norm_forward_threads(8192) == 256);
  CHECK(lg::norm_forward_threads(16384) == 512);
  CHECK(lg::norm_forward_threads(16392) == 512);  // more than four chunks: the re-reading forward
  CHECK(lg::norm_backward_threads(4096, false) == 256);
  CHECK(lg::norm_backward_threads(8192, false) == 512);
  CHECK(lg::norm_backward_threads(200, false) == 32);  // 25 chunks: one each
  CHECK(lg::norm_backward_threads(4104, false) == 288);  // 514 chunks: two a thread, idle slots
  CHECK(lg::norm_backward_threads(8200, false) == lg::row_threads(8200));
  CHECK(lg::norm_backward_threads(4096, true) == 128);
  CHECK(lg::norm_backward_threads(8192, true) == 256);
  CHECK(lg::norm_backward_threads(200, true) == 32);   // 25 chunks: one each
  CHECK(lg::norm_backward_threads(520, true) == 32);   // 65 chunks: three a thread
  CHECK(lg::norm_backward_threads(4104, true) == 160);  // 514 chunks: four a thread, idle slots
  CHECK(lg::norm_backward_threads(8200, true) == lg::row_threads(8200));
  // Four backward chunks: LayerNorm, not memory-efficient, dy / x_or_y / dx of one 16-bit dtype.
  CHECK(lg::norm_backward_four_chunks(lg::NormKind::Layer, false, Dt::BF16, Dt::BF16, Dt::BF16));
  CHECK(lg::norm_backward_four_chunks(lg::NormKind::Layer, false, Dt::F16, Dt::F16, Dt::F16));
  CHECK_FALSE(lg::norm_backward_four_chunks(lg::NormKind::Rms, false, Dt::BF16, Dt::BF16, Dt::BF16));
  CHECK_FALSE(lg::norm_backward_four_chunks(lg::NormKind::Layer, true, Dt::BF16, Dt::BF16, Dt::BF16));
  CHECK_FALSE(lg::norm_backward_four_chunks(lg::NormKind::Layer, false, Dt::F32, Dt::BF16, Dt::BF16));
  CHECK_FALSE(lg::norm_backward_four_chunks(lg::NormKind::Layer, false, Dt::BF16, Dt::F16, Dt::BF16));
  CHECK_FALSE(lg::norm_backward_four_chunks(lg::NormKind::Layer, false, Dt::F32, Dt::F32, Dt::F32));
  for (sy_norm_kind kind : kKinds) {
    for (int64_t hidden : {520, 4104, 8192}) {
      run_case(make(kind, Dt::BF16, 3, hidden, SY_NORM_RESIDUAL));
      run_case(make(kind, Dt::F16, 3, hidden));
      NormCase mixed = make(kind, Dt::BF16, 3, hidden);
      mixed.w = mixed.gw = Dt::F32;  // the run-time-dtype register backward
      run_case(mixed);
    }
    run_case(make(kind, Dt::BF16, 2, 16392));
  }
  // The four-chunk register backward on partial chunks, aligned (a padded stride) and not: the
  // same bits; and on several 32-row blocks.
  for (int64_t hidden : {1001, 8191}) {
    NormCase c = make(SY_NORM_LAYER, Dt::BF16, hidden > 2000 ? 3 : 40, hidden,
                      SY_NORM_RESIDUAL | SY_NORM_ZERO_CENTERED_GAMMA);
    c.pad = 8 - hidden % 8;
    const NormOutputs padded = run_case(c);
    c.pad = 0;
    const NormOutputs packed = run_case(c);
    CHECK_FALSE(padded.backward_ring);
    check_same_bits(padded, packed);
  }
}

TEST_CASE("norms: every flag alone and together, more than one backward block") {
  const uint32_t all = SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_RESIDUAL | SY_NORM_MEMORY_EFFICIENT |
                       SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  for (sy_norm_kind kind : kKinds) {
    for (Dt dtype : {Dt::F32, Dt::BF16}) {
      for (uint32_t flag : {uint32_t{SY_NORM_ZERO_CENTERED_GAMMA}, uint32_t{SY_NORM_RESIDUAL},
                            uint32_t{SY_NORM_MEMORY_EFFICIENT},
                            uint32_t{SY_NORM_ACCUMULATE_GRAD_WEIGHT}, all})
        run_case(make(kind, dtype, 5, 127, flag));
      run_case(make(kind, dtype, 70, 40, all));  // 3 backward blocks of 32 rows
      run_case(make(kind, dtype, 33, 1000, all));  // the next-row prefetch across 2 blocks
    }
  }
  NormCase c = make(SY_NORM_LAYER, Dt::BF16, 5, 127, SY_NORM_MEMORY_EFFICIENT);
  c.bias = false;
  run_case(c);
  c.flags = 0;
  run_case(c);
}

TEST_CASE("norms: dtype mixes (y, weight, grad weight) and dx over dy") {
  for (sy_norm_kind kind : kKinds) {
    NormCase c = make(kind, Dt::BF16, 5, 127);
    c.y = Dt::F32;
    run_case(c);
    c = make(kind, Dt::F32, 5, 127);
    c.y = Dt::BF16;
    run_case(c);
    c = make(kind, Dt::F16, 5, 127);
    c.w = c.gw = Dt::F32;
    run_case(c);
    c = make(kind, Dt::BF16, 5, 127, SY_NORM_RESIDUAL);
    c.gw = Dt::F32;
    c.dx_over_dy = true;
    run_case(c);
  }
}

TEST_CASE("norms: strided and unaligned rows give the same bits as aligned ones") {
  for (sy_norm_kind kind : kKinds) {
    const uint32_t flags = SY_NORM_RESIDUAL | SY_NORM_ZERO_CENTERED_GAMMA;
    NormCase c = make(kind, Dt::BF16, 5, 4096, flags);
    const NormOutputs aligned = run_case(c);
    CHECK(aligned.forward_ring);
    CHECK(aligned.backward_ring);
    c.pad = 3;
    c.misalign = 2;
    const NormOutputs shifted = run_case(c);
    CHECK_FALSE(shifted.forward_ring);
    CHECK_FALSE(shifted.backward_ring);
    check_same_bits(aligned, shifted);
  }
}

TEST_CASE("norms: llama casting stays within the reference's tolerance when y has x's dtype") {
  for (Dt dtype : {Dt::BF16, Dt::F16, Dt::F32}) {
    NormCase c = make(SY_NORM_RMS, dtype, 5, 127, SY_NORM_ZERO_CENTERED_GAMMA);
    c.llama = true;
    const NormOutputs llama = run_case(c);
    c.llama = false;
    const NormOutputs gemma = run_case(c);
    if (dtype == Dt::F32) CHECK(llama.y == gemma.y);  // nothing to round x-hat to
  }
}

TEST_CASE("norms: rows per dgamma/dbeta partial, fixed by rows and hidden") {
  CHECK(lg::norm_rows_per_block(16384, 8192) == 64);
  CHECK(lg::norm_rows_per_block(16384, 5121) == 64);
  CHECK(lg::norm_rows_per_block(10241, 6144) == 64);
  CHECK(lg::norm_rows_per_block(10240, 6144) == 32);  // one round of 32-row partials
  CHECK(lg::norm_rows_per_block(16384, 5120) == 32);  // 3 backward blocks per SM
  CHECK(lg::norm_rows_per_block(16384, 8200) == 32);  // the shared-memory backward
  CHECK(lg::norm_backward_blocks(16384, lg::norm_rows_per_block(16384, 8192)) == 256);
  CHECK(lg::norm_backward_blocks(150, 64) == 3);
}

TEST_CASE("norms: the ring kernels give the register kernels' bits (many rows a block, stage "
          "reuse, several 32- or 64-row partials a block, a short last partial)") {
  // sm_count 1: H = 64 -> 16 forward / backward blocks of 32 threads with 8-stage rings; 1024 ->
  // 16 32-thread forward blocks with 4 chunks (K = 4), 64-thread RMS/L2 backward blocks (2
  // chunks), 32-thread LN ones (4 chunks); 4096 -> 8 forward blocks of 128 threads (3 stages),
  // 4 RMS backward blocks of 256 threads x 2 chunks, 4 LN ones of 128 x 4; 8192 -> 4 forward
  // blocks of 256 threads x 4 chunks, 2 RMS backward blocks of 512 threads x 2 chunks, 2 LN ones
  // of 256 x 4. Rows: several per block and more than 32 per backward block where the
  // emulator's time allows.
  struct Shape {
    int64_t hidden, rows;
  };
  for (const Shape shape : {Shape{64, 300}, Shape{1024, 150}, Shape{4096, 70}, Shape{8192, 35}}) {
    for (sy_norm_kind kind : kKinds) {
      for (uint32_t flags : {0u, uint32_t{SY_NORM_RESIDUAL | SY_NORM_ZERO_CENTERED_GAMMA}}) {
        NormCase c = make(kind, Dt::BF16, shape.rows, shape.hidden, flags);
        c.dx_over_dy = shape.hidden == 4096;
        const NormOutputs ring = check_same_bits_as_registers(c);
        CHECK(ring.forward_ring);
        CHECK(ring.backward_ring);
      }
    }
  }
  // 64-row partials (norm_rows_per_block's choice for 5120 < H <= 8192 and many rows, set here
  // on fewer rows): H = 6144 -> 192 LN backward threads x 4 chunks, 384 RMS ones x 2, either 2
  // ring blocks per SM. LayerNorm, 140 rows on 1 SM: partials of 64, 64 and 12, block 0 walking
  // the first and the short last one across its ring; RMSNorm with residual, 76 rows (64 and
  // 12) on 2 SMs; each also on 3 / 2 register blocks.
  for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS}) {
    const bool layer = kind == SY_NORM_LAYER;
    NormCase c = make(kind, Dt::BF16, layer ? 140 : 76, 6144, layer ? 0u : SY_NORM_RESIDUAL);
    c.rows_per_block = 64;
    c.sm_count = layer ? 1 : 2;
    const NormOutputs ring = check_same_bits_as_registers(c);
    CHECK(ring.forward_ring);
    CHECK(ring.backward_ring);
  }
  // And the shared-memory backward's 64-row partials (H > 8192): 64 rows and 6.
  NormCase wide = make(SY_NORM_LAYER, Dt::BF16, 70, 8200, SY_NORM_RESIDUAL);
  wide.rows_per_block = 64;
  run_case(wide);
  // The other compile-time forms: f16, RMSNorm with llama casting, LayerNorm and L2 with
  // residual and dx over dy, on 3 SMs.
  for (sy_norm_kind kind : kKinds) {
    for (bool llama : {false, true}) {
      if (llama && kind != SY_NORM_RMS) continue;
      NormCase c = make(kind, Dt::F16, 40, 512, SY_NORM_RESIDUAL);
      c.llama = llama;
      c.dx_over_dy = true;
      c.sm_count = 3;
      const NormOutputs ring = check_same_bits_as_registers(c);
      CHECK(ring.forward_ring);
      CHECK(ring.backward_ring);
    }
  }
  // What the ring kernels leave to the register kernels: gamma of another dtype than the rows,
  // y of another dtype, memory-efficient mode.
  NormCase c = make(SY_NORM_LAYER, Dt::F16, 40, 512, SY_NORM_MEMORY_EFFICIENT);
  c.w = c.gw = Dt::F32;
  c.sm_count = 3;
  const NormOutputs mixed = run_case(c);
  CHECK_FALSE(mixed.forward_ring);
  CHECK_FALSE(mixed.backward_ring);
  c = make(SY_NORM_RMS, Dt::BF16, 40, 512, 0);
  c.y = Dt::F32;
  c.sm_count = 3;
  CHECK_FALSE(run_case(c).forward_ring);
}

TEST_CASE("norms: the ring kernels' plain forms (common flags, all of a thread's chunks) give the "
          "register kernels' bits") {
  // H = 1024: forward 32 threads x 4 chunks, RMS/L2 backward 64 x 2, LayerNorm backward 32 x 4:
  // every chunk slot full, so calls without residual or zero-centred gamma (and with beta, for
  // the LayerNorm forward) take the plain forms. H = 1000 leaves slots empty: the general ones.
  for (sy_norm_kind kind : kKinds) {
    for (Dt dtype : {Dt::BF16, Dt::F16}) {
      for (bool llama : {false, true}) {
        if (llama && kind != SY_NORM_RMS) continue;
        for (int64_t hidden : {1000, 1024}) {
          NormCase c = make(kind, dtype, 40, hidden, SY_NORM_ACCUMULATE_GRAD_WEIGHT);
          c.llama = llama;
          c.dx_over_dy = dtype == Dt::F16;
          c.sm_count = 3;
          const NormOutputs ring = check_same_bits_as_registers(c);
          CHECK(ring.forward_ring);
          CHECK(ring.backward_ring);
        }
      }
    }
  }
  // LayerNorm without beta: the general forward, the plain backward (it reads no beta).
  NormCase c = make(SY_NORM_LAYER, Dt::BF16, 40, 1024);
  c.bias = false;
  c.sm_count = 3;
  check_same_bits_as_registers(c);

  // Which calls are plain.
  lg::NormForwardArgs f;
  f.kind = lg::NormKind::Layer;
  f.hidden = 8192;
  f.threads = lg::norm_forward_threads(f.hidden);
  int weight = 0, bias = 0, residual = 0;
  f.weight = &weight;
  f.bias = &bias;
  CHECK(lg::plain_forward(f, 4));
  CHECK_FALSE(lg::plain_forward(f, 2));  // 1024 chunks, 256 threads: four each
  f.hidden = 8184;                      // one slot empty
  CHECK_FALSE(lg::plain_forward(f, 4));
  f.hidden = 8192;
  f.bias = nullptr;
  CHECK_FALSE(lg::plain_forward(f, 4));
  f.bias = &bias;
  f.zero_centered = true;
  CHECK_FALSE(lg::plain_forward(f, 4));
  f.zero_centered = false;
  f.residual = &residual;
  CHECK_FALSE(lg::plain_forward(f, 4));
  f.residual = nullptr;
  f.kind = lg::NormKind::L2;
  f.weight = f.bias = nullptr;
  CHECK(lg::plain_forward(f, 4));
  lg::NormBackwardArgs b;
  b.kind = lg::NormKind::Layer;
  b.hidden = 8192;
  b.threads = lg::norm_backward_threads(b.hidden, true);
  b.weight = &weight;
  CHECK(lg::plain_backward(b, 4));  // beta or not
  b.d_residual_out = &residual;
  CHECK_FALSE(lg::plain_backward(b, 4));
  b.d_residual_out = nullptr;
  b.weight = nullptr;
  CHECK_FALSE(lg::plain_backward(b, 4));
}
