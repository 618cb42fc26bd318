#include "kernel_checks.hpp"

#include "ce_run.hpp"
#include "ce_validate.hpp"
#include "emulator.hpp"
#include "norm_run.hpp"
#include "norm_validate.hpp"
#include "support/fused_support.hpp"

#include <switchyard/comm.hpp>
#include <switchyard/conformance/compare.hpp>
#include <switchyard/conformance/reference_ce.hpp>
#include <switchyard/conformance/reference_norm.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <thread>

namespace switchyard::fused::test {
namespace {

namespace conf = switchyard::conformance;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// splitmix64: a small, good, seedable generator.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ull + 12345) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double low, double high) {
    return low + (high - low) * static_cast<double>(next() >> 11) / 9007199254740992.0;
  }
  // +-[low, high): never near zero, either sign.
  double nonzero(double low, double high) { return (next() & 1 ? 1 : -1) * uniform(low, high); }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

std::string dtype_text(DLDataType t) { return sy::dtype_name(t); }

int64_t element_size(DLDataType t) { return (t.bits * t.lanes + 7) / 8; }

// Workspace memory the size the plugin asks for, poisoned, 256-byte aligned.
class Workspace {
 public:
  explicit Workspace(int64_t bytes) : storage_(static_cast<size_t>(bytes) + 512, 0xcd) {
    const auto base = reinterpret_cast<uintptr_t>(storage_.data());
    pointer_ = reinterpret_cast<void*>((base + 255) / 256 * 256);
    bytes_ = bytes;
  }
  void* get() { return bytes_ > 0 ? pointer_ : nullptr; }
  int64_t bytes() const { return bytes_; }

 private:
  std::vector<unsigned char> storage_;
  void* pointer_ = nullptr;
  int64_t bytes_ = 0;
};

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v)
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  return m;
}

void compare(std::string& failures, const std::string& name, const std::vector<double>& got,
             const std::vector<double>& expected, const conf::Tolerance& tolerance,
             const std::vector<double>* scale = nullptr, int64_t columns = 0) {
  if (auto mismatch = conf::find_mismatch(got, expected, tolerance, scale))
    failures += conf::describe_mismatch(name, *mismatch, columns) + "\n";
}

std::unique_ptr<HostTensor> matrix(DLDataType dtype, int64_t rows, int64_t columns, bool strided,
                                   bool misaligned) {
  const int64_t stride = strided ? columns + 3 : 0;
  const int64_t offset = misaligned ? (element_size(dtype) == 2 ? 2 : 4) : 0;
  return std::make_unique<HostTensor>(dtype, std::vector<int64_t>{rows, columns}, stride, offset);
}

std::unique_ptr<HostTensor> vector_of(DLDataType dtype, int64_t n) {
  return std::make_unique<HostTensor>(dtype, std::vector<int64_t>{n});
}

void poison(HostTensor& t) {
  for (int64_t i = 0; i < t.rows(); ++i)
    for (int64_t j = 0; j < t.columns(); ++j) {
      if (t.get()->dtype.code == kDLInt) t.set(i, j, -7);
      else t.set(i, j, kNaN);
    }
}

}  // namespace

// ---- cross entropy ------------------------------------------------------------------------

std::string CeCase::describe() const {
  std::string d = "N=" + std::to_string(rows) + " V=" + std::to_string(vocab);
  if (!split.empty()) {
    d += " Vp=";
    for (size_t r = 0; r < split.size(); ++r) d += (r ? "+" : "") + std::to_string(split[r]);
  }
  d += " logits=" + dtype_text(logits) + " grad=" + dtype_text(grad) + " labels=" + dtype_text(labels);
  if (alpha != 0) d += " alpha=" + std::to_string(alpha) + (smoothing == SY_SMOOTHING_PYTORCH ? "(pytorch)" : "(megatron)");
  if (flags & SY_CE_IGNORE_INDEX) d += " ignore_index=" + std::to_string(ignore_index);
  if (flags & SY_CE_ARGMAX) d += " argmax";
  if (flags & SY_CE_GRAD_IN_FORWARD) d += aliased ? " grad-in-forward(aliased)" : " grad-in-forward";
  if (flags & SY_CE_CHECK_LABELS) d += " check-labels";
  if (strided) d += " strided";
  if (misaligned) d += " misaligned";
  if (backward_in_place) d += " backward-in-place";
  if (ties) d += " ties";
  if (unowned_labels) d += " unowned-labels";
  return d + " seed=" + std::to_string(seed);
}

CeRun run_ce(const CeCase& c, bool backward) {
  const std::vector<int64_t> split = c.split.empty() ? std::vector<int64_t>{c.vocab} : c.split;
  const int tp = static_cast<int>(split.size());
  std::vector<int64_t> starts(split.size(), 0);
  for (size_t r = 1; r < split.size(); ++r) starts[r] = starts[r - 1] + split[r - 1];
  const int64_t n = c.rows, v = c.vocab;

  // ---- data (global); each row from its own generator, so a row is the same in any batch ----
  CeRun run;
  run.logits.resize(static_cast<size_t>(n * v));
  run.labels.resize(static_cast<size_t>(n));
  run.grad_scale.resize(static_cast<size_t>(n));
  run.grad_loss.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Random random(c.seed * 1000003 + static_cast<uint64_t>(i));
    for (int64_t j = 0; j < v; ++j)
      run.logits[i * v + j] = conf::round_to_dtype(random.uniform(-4, 4) + (i % 3 == 2 ? 20 : 0), c.logits);
    run.labels[i] = random.below(v);
    run.grad_scale[i] = conf::round_to_dtype(random.uniform(0.05, 1.05), sy::kF32);
    run.grad_loss[i] = conf::round_to_dtype(random.uniform(0.05, 1.05), sy::kF32);
  }
  if (c.ties) {
    // The row max three times, on columns of different ranks when there are several.
    for (int64_t i = 0; i < n; ++i) {
      const double top = i % 3 == 2 ? 26.0 : 6.0;
      for (int64_t j : {v - 1, v / 2, int64_t{1} + (i % 2)}) run.logits[i * v + j] = top;
    }
  }
  if ((c.flags & SY_CE_IGNORE_INDEX) && n > 1) run.labels[1] = c.ignore_index;
  if (c.unowned_labels && n > 2) {
    run.labels[2] = -3;
    if (n > 4) run.labels[4] = v + 2;
  }
  if (c.bad_label_row >= 0) run.labels[c.bad_label_row] = v + 5;

  run.status.assign(tp, SY_OK);
  run.message.assign(tp, "");
  run.collectives.assign(tp, 0);
  run.stated_collectives.assign(tp, -1);
  run.launched.assign(tp, {});
  run.host_reads.assign(tp, 0);
  run.loss_by_rank.assign(tp, {});
  run.lse_by_rank.assign(tp, {});
  run.argmax_by_rank.assign(tp, {});
  const bool grad_in_forward = (c.flags & SY_CE_GRAD_IN_FORWARD) != 0;
  if (grad_in_forward) run.forward_grad.assign(static_cast<size_t>(n * v), kNaN);

  struct Rank {
    sy_ce_problem problem{};
    std::unique_ptr<HostTensor> logits, labels, loss, lse, argmax, grad_scale, grad;
    std::unique_ptr<Workspace> workspace;
  };
  std::vector<Rank> ranks(static_cast<size_t>(tp));
  ThreadGroup group(tp, 20000);

  auto forward_rank = [&](int r) {
    Rank& k = ranks[r];
    sy_ce_problem& p = k.problem;
    p.struct_size = sizeof p;
    p.rows = n;
    p.vocab_local = split[r];
    p.vocab_start = starts[r];
    p.vocab_size = v;
    p.logits_dtype = c.logits;
    p.label_dtype = c.labels;
    p.grad_dtype = c.grad;
    p.device = DLDevice{kDLCUDA, 0};
    p.tp_size = tp;
    p.label_smoothing = c.alpha;
    p.smoothing = c.smoothing;
    p.ignore_index = c.ignore_index;
    p.flags = c.flags;
    const int64_t vp = split[r];
    k.logits = matrix(c.logits, n, vp, c.strided, c.misaligned);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < vp; ++j) k.logits->set(i, j, run.logits[i * v + starts[r] + j]);
    k.labels = vector_of(c.labels, n);
    for (int64_t i = 0; i < n; ++i) k.labels->set(i, static_cast<double>(run.labels[i]));
    k.loss = vector_of(sy::kF32, n);
    k.lse = vector_of(sy::kF32, n);
    poison(*k.loss);
    poison(*k.lse);
    if (c.flags & SY_CE_ARGMAX) {
      k.argmax = vector_of(sy::kI64, n);
      poison(*k.argmax);
    }
    sy_ce_forward_args a{};
    a.struct_size = sizeof a;
    a.problem = &p;
    a.logits = k.logits->get();
    a.labels = k.labels->get();
    a.loss = k.loss->get();
    a.lse = k.lse->get();
    a.argmax = k.argmax ? k.argmax->get() : nullptr;
    if (grad_in_forward) {
      k.grad_scale = vector_of(sy::kF32, n);
      for (int64_t i = 0; i < n; ++i) k.grad_scale->set(i, run.grad_scale[i]);
      a.grad_scale = k.grad_scale->get();
      if (!c.aliased) {
        k.grad = matrix(c.grad, n, vp, c.strided, c.misaligned);
        poison(*k.grad);
      }
      a.grad_logits = c.aliased ? k.logits->get() : k.grad->get();
    }
    k.workspace = std::make_unique<Workspace>(ce_workspace_bytes(p));
    a.workspace = k.workspace->get();
    a.workspace_bytes = k.workspace->bytes();
    sy_comm comm{};
    if (tp > 1) {
      comm = *group.comm(r);
      comm.device = p.device;  // the group exchanges host memory, which these tensors are
      a.tp = &comm;
    }
    EmulatedDevice device;
    try {
      validate_ce_problem(&p);
      validate_ce_forward(&a, ce_workspace_bytes(p));
      ce_forward(a, Emulator::instance().ce_kernels(ce_specialization(p)), device);
    } catch (const sy::Failure& failure) {
      run.status[r] = failure.status();
      run.message[r] = failure.what();
    } catch (const std::exception& e) {
      run.status[r] = SY_ERR_INTERNAL;
      run.message[r] = std::string("emulator: ") + e.what();
    }
    run.collectives[r] = tp > 1 ? group.collectives(r) : 0;
    run.stated_collectives[r] = ce_forward_collectives(p);
    run.launched[r] = device.launched;
    run.host_reads[r] = device.reads;
    run.loss_by_rank[r] = k.loss->values();
    run.lse_by_rank[r] = k.lse->values();
    if (k.argmax)
      for (double x : k.argmax->values()) run.argmax_by_rank[r].push_back(static_cast<int64_t>(x));
    if (grad_in_forward) {
      HostTensor& g = c.aliased ? *k.logits : *k.grad;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < vp; ++j) run.forward_grad[i * v + starts[r] + j] = g.at(i, j);
    }
  };
  if (tp == 1) {
    forward_rank(0);
  } else {
    std::vector<std::thread> threads;
    for (int r = 0; r < tp; ++r) threads.emplace_back(forward_rank, r);
    for (auto& t : threads) t.join();
  }
  run.loss = run.loss_by_rank[0];
  run.lse = run.lse_by_rank[0];
  run.argmax = run.argmax_by_rank[0];

  bool all_ok = true;
  for (sy_status s : run.status) all_ok = all_ok && s == SY_OK;
  if (!backward || grad_in_forward || !all_ok) return run;

  // ---- backward, from the reference lse rounded to fp32 (independent of the forward) ----
  conf::CeReferenceProblem rp;
  rp.rows = n;
  rp.vocab = v;
  rp.label_smoothing = c.alpha;
  rp.smoothing = c.smoothing;
  rp.ignore_index = c.ignore_index;
  rp.flags = c.flags;
  const auto reference = conf::reference_ce_forward(rp, run.logits, run.labels, nullptr);
  run.lse_for_backward.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) run.lse_for_backward[i] = conf::round_to_dtype(reference.lse[i], sy::kF32);
  run.backward_grad.assign(static_cast<size_t>(n * v), kNaN);
  for (int r = 0; r < tp; ++r) {
    Rank& k = ranks[r];
    const int64_t vp = split[r];
    auto lse = vector_of(sy::kF32, n), grad_loss = vector_of(sy::kF32, n);
    for (int64_t i = 0; i < n; ++i) {
      lse->set(i, run.lse_for_backward[i]);
      grad_loss->set(i, run.grad_loss[i]);
    }
    std::unique_ptr<HostTensor> out;
    if (!c.backward_in_place) {
      out = matrix(c.grad, n, vp, c.strided, c.misaligned);
      poison(*out);
    }
    HostTensor& grad = c.backward_in_place ? *k.logits : *out;
    sy_ce_backward_args b{};
    b.struct_size = sizeof b;
    b.problem = &k.problem;
    b.logits = k.logits->get();
    b.labels = k.labels->get();
    b.lse = lse->get();
    b.grad_loss = grad_loss->get();
    b.grad_logits = grad.get();
    EmulatedDevice device;
    try {
      validate_ce_backward(&b);
      ce_backward(b, Emulator::instance().ce_kernels(ce_specialization(k.problem)), device);
    } catch (const sy::Failure& failure) {
      run.status[r] = failure.status();
      run.message[r] = std::string("backward: ") + failure.what();
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < vp; ++j) run.backward_grad[i * v + starts[r] + j] = grad.at(i, j);
  }
  return run;
}

std::string check_ce(const CeCase& c, const CeRun& run) {
  std::string failures;
  for (size_t r = 0; r < run.status.size(); ++r)
    if (run.status[r] != SY_OK)
      failures += "rank " + std::to_string(r) + " failed (status " + std::to_string(run.status[r]) +
                  "): " + run.message[r] + "\n";
  if (!failures.empty()) return failures;
  conf::CeReferenceProblem rp;
  rp.rows = c.rows;
  rp.vocab = c.vocab;
  rp.label_smoothing = c.alpha;
  rp.smoothing = c.smoothing;
  rp.ignore_index = c.ignore_index;
  rp.flags = c.flags;
  const bool grad_in_forward = (c.flags & SY_CE_GRAD_IN_FORWARD) != 0;
  const auto ref = conf::reference_ce_forward(rp, run.logits, run.labels, grad_in_forward ? &run.grad_scale : nullptr);
  std::vector<double> loss_scale(ref.loss.size());
  for (size_t i = 0; i < ref.loss.size(); ++i) loss_scale[i] = std::max(std::fabs(ref.loss[i]), std::fabs(ref.lse[i]));
  for (size_t r = 0; r < run.status.size(); ++r) {
    const std::string p = run.status.size() > 1 ? "rank " + std::to_string(r) + " " : "";
    compare(failures, p + "loss", run.loss_by_rank[r], ref.loss,
            conf::statistic_tolerance(c.logits, max_abs(ref.loss)), &loss_scale);
    compare(failures, p + "lse", run.lse_by_rank[r], ref.lse, conf::statistic_tolerance(c.logits, max_abs(ref.lse)));
    if (c.flags & SY_CE_ARGMAX)
      for (size_t i = 0; i < ref.argmax.size(); ++i)
        if (run.argmax_by_rank[r][i] != ref.argmax[i]) {
          failures += p + "argmax[" + std::to_string(i) + "] = " + std::to_string(run.argmax_by_rank[r][i]) +
                      ", expected " + std::to_string(ref.argmax[i]) + "\n";
          break;
        }
    if (run.collectives[r] != run.stated_collectives[r])
      failures += p + "issued " + std::to_string(run.collectives[r]) + " collectives, states " +
                  std::to_string(run.stated_collectives[r]) + "\n";
  }
  if (grad_in_forward)
    compare(failures, "grad_logits (forward)", run.forward_grad, ref.grad,
            conf::elementwise_tolerance(c.grad, max_abs(ref.grad)), &ref.grad_magnitude, c.vocab);
  if (!run.backward_grad.empty()) {
    const auto back = conf::reference_ce_backward(rp, run.logits, run.labels, run.lse_for_backward, run.grad_loss);
    compare(failures, "grad_logits (backward)", run.backward_grad, back.grad,
            conf::elementwise_tolerance(c.grad, max_abs(back.grad)), &back.grad_magnitude, c.vocab);
  }
  return failures;
}

// ---- normalization ------------------------------------------------------------------------

std::string NormCase::describe() const {
  std::string d = std::string(norm_kind_name(kind)) + " N=" + std::to_string(rows) + " H=" + std::to_string(hidden) +
                  " x=" + dtype_text(x) + " y=" + dtype_text(y);
  if (kind != SY_NORM_L2) d += " weight=" + dtype_text(weight) + " grad_weight=" + dtype_text(grad_weight);
  if (flags & SY_NORM_ZERO_CENTERED_GAMMA) d += " zero-centered";
  if (flags & SY_NORM_RESIDUAL) d += " residual";
  if (flags & SY_NORM_MEMORY_EFFICIENT) d += " memory-efficient";
  if (flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) d += " accumulate";
  if (kind == SY_NORM_LAYER && !bias) d += " no-bias";
  if (strided) d += " strided";
  if (misaligned) d += " misaligned";
  if (dx_in_place) d += " dx-in-place";
  return d + " seed=" + std::to_string(seed);
}

NormRun run_norm(const NormCase& c) {
  const int64_t n = c.rows, h = c.hidden;
  const bool residual = (c.flags & SY_NORM_RESIDUAL) != 0;
  const bool memory_efficient = (c.flags & SY_NORM_MEMORY_EFFICIENT) != 0;
  const bool accumulate = (c.flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0;
  const bool gamma = c.kind != SY_NORM_L2;
  const bool beta = c.kind == SY_NORM_LAYER && c.bias;
  // One generator per tensor, each drawn row by row: the first rows of a batch are the same
  // whatever the batch size.
  uint64_t stream = 0;
  auto generator = [&] { return Random(c.seed * 1000003 + stream++); };
  NormRun run;

  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = c.kind;
  p.rows = n;
  p.hidden = h;
  p.eps = c.eps;
  p.x_dtype = c.x;
  p.y_dtype = c.y;
  p.weight_dtype = c.weight;
  p.grad_weight_dtype = c.grad_weight;
  p.device = DLDevice{kDLCUDA, 0};
  p.flags = c.flags;

  auto fill = [&](HostTensor& t, std::vector<double>& record, double offset_every_third, double low, double high) {
    Random random = generator();
    for (int64_t i = 0; i < t.rows(); ++i)
      for (int64_t j = 0; j < t.columns(); ++j) t.set(i, j, (i % 3 == 2 ? offset_every_third : 0) + random.nonzero(low, high));
    record = t.values();
  };
  auto x = matrix(c.x, n, h, c.strided, c.misaligned);
  fill(*x, run.x, 3.0, 0.05, 2.0);
  std::unique_ptr<HostTensor> res, res_out, weight, bias, y, mean, rstd;
  if (residual) {
    res = matrix(c.x, n, h, c.strided, false);
    fill(*res, run.residual, 0, 0.05, 1.0);
    res_out = matrix(c.x, n, h, c.strided, c.misaligned);
    poison(*res_out);
  }
  Random random = generator();
  if (gamma) {
    weight = vector_of(c.weight, h);
    const bool zc = (c.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0;
    for (int64_t j = 0; j < h; ++j) weight->set(j, (zc ? 0.0 : 1.0) + random.nonzero(0.05, 0.5));
    run.gamma = weight->values();
  }
  if (beta) {
    bias = vector_of(c.weight, h);
    for (int64_t j = 0; j < h; ++j) bias->set(j, random.nonzero(0.05, 0.5));
    run.beta = bias->values();
  }
  y = matrix(c.y, n, h, c.strided, false);
  poison(*y);
  if (c.kind == SY_NORM_LAYER) {
    mean = vector_of(sy::kF32, n);
    poison(*mean);
  }
  rstd = vector_of(sy::kF32, n);
  poison(*rstd);
  Workspace workspace(norm_workspace_bytes(p));

  sy_norm_forward_args a{};
  a.struct_size = sizeof a;
  a.problem = &p;
  a.x = x->get();
  a.residual = res ? res->get() : nullptr;
  a.weight = weight ? weight->get() : nullptr;
  a.bias = bias ? bias->get() : nullptr;
  a.y = y->get();
  a.residual_out = res_out ? res_out->get() : nullptr;
  a.mean = mean ? mean->get() : nullptr;
  a.rstd = rstd->get();
  a.workspace = workspace.get();
  a.workspace_bytes = workspace.bytes();
  EmulatedDevice device;
  try {
    validate_norm_problem(&p);
    validate_norm_forward(&a, norm_workspace_bytes(p));
    const NormKernels kernels = Emulator::instance().norm_kernels(norm_specialization(p));
    norm_forward(a, kernels, device);
    run.y = y->values();
    if (res_out) run.h = res_out->values();
    if (mean) run.mean = mean->values();
    run.rstd = rstd->values();

    // Backward from the forward's own outputs, as a training step does.
    auto dy = matrix(c.y, n, h, c.strided, c.misaligned);
    fill(*dy, run.dy, 0, 0.05, 1.0);
    std::unique_ptr<HostTensor> d_res, dx, dweight, dbias;
    if (residual) {
      d_res = matrix(c.x, n, h, c.strided, false);
      fill(*d_res, run.d_residual_out, 0, 0.05, 1.0);
    }
    if (!c.dx_in_place) {
      dx = matrix(c.x, n, h, c.strided, c.misaligned);
      poison(*dx);
    }
    if (gamma && c.dweight) {
      dweight = vector_of(c.grad_weight, h);
      if (accumulate) {
        for (int64_t j = 0; j < h; ++j) dweight->set(j, random.nonzero(0.05, 2.0));
        run.dgamma_initial = dweight->values();
      } else {
        poison(*dweight);
      }
    }
    if (beta) {
      dbias = vector_of(c.grad_weight, h);
      if (accumulate) {
        for (int64_t j = 0; j < h; ++j) dbias->set(j, random.nonzero(0.05, 2.0));
        run.dbeta_initial = dbias->values();
      } else {
        poison(*dbias);
      }
    }
    HostTensor& x_or_y = memory_efficient ? *y : residual ? *res_out : *x;
    run.x_or_y = x_or_y.values();
    sy_norm_backward_args b{};
    b.struct_size = sizeof b;
    b.problem = &p;
    b.dy = dy->get();
    b.x_or_y = x_or_y.get();
    b.weight = a.weight;
    b.bias = a.bias;
    b.mean = mean ? mean->get() : nullptr;
    b.rstd = rstd->get();
    b.d_residual_out = d_res ? d_res->get() : nullptr;
    b.dx = c.dx_in_place ? dy->get() : dx->get();
    b.dweight = dweight ? dweight->get() : nullptr;
    b.dbias = dbias ? dbias->get() : nullptr;
    b.workspace = workspace.get();
    b.workspace_bytes = workspace.bytes();
    validate_norm_backward(&b, norm_workspace_bytes(p));
    norm_backward(b, kernels, device);
    run.dx = (c.dx_in_place ? *dy : *dx).values();
    if (dweight) run.dgamma = dweight->values();
    if (dbias) run.dbeta = dbias->values();
  } catch (const sy::Failure& failure) {
    run.status = failure.status();
    run.message = failure.what();
  } catch (const std::exception& e) {
    run.status = SY_ERR_INTERNAL;
    run.message = std::string("emulator: ") + e.what();
  }
  run.launched = device.launched;
  return run;
}

std::string check_norm(const NormCase& c, const NormRun& run) {
  if (run.status != SY_OK) return "failed (status " + std::to_string(run.status) + "): " + run.message;
  std::string failures;
  conf::NormReferenceProblem rp;
  rp.kind = c.kind;
  rp.rows = c.rows;
  rp.hidden = c.hidden;
  rp.eps = static_cast<double>(c.eps);
  rp.flags = c.flags;
  conf::NormReferenceForwardInput in;
  in.x = run.x;
  in.residual = run.residual;
  in.gamma = run.gamma;
  in.beta = run.beta;
  const DLDataType x_dtype = c.x;
  in.round_to_x_dtype = [x_dtype](double value) { return conf::round_to_dtype(value, x_dtype); };
  const auto ref = conf::reference_norm_forward(rp, in);
  compare(failures, "y", run.y, ref.y, conf::elementwise_tolerance(c.y, max_abs(ref.y)), &ref.y_magnitude, c.hidden);
  if (!run.h.empty())
    compare(failures, "residual_out", run.h, ref.h, conf::elementwise_tolerance(c.x, max_abs(ref.h)), &ref.h_magnitude, c.hidden);
  if (c.kind == SY_NORM_LAYER)
    compare(failures, "mean", run.mean, ref.mean, conf::statistic_tolerance(c.x, max_abs(ref.mean)));
  compare(failures, "rstd", run.rstd, ref.rstd, conf::statistic_tolerance(c.x, max_abs(ref.rstd)));

  conf::NormReferenceBackwardInput bin;
  bin.dy = run.dy;
  bin.x_or_y = run.x_or_y;
  bin.gamma = run.gamma;
  bin.beta = run.beta;
  bin.mean = run.mean;
  bin.rstd = run.rstd;
  bin.d_residual_out = run.d_residual_out;
  bin.dgamma_initial = run.dgamma_initial;
  bin.dbeta_initial = run.dbeta_initial;
  const auto back = conf::reference_norm_backward(rp, bin);
  compare(failures, "dx", run.dx, back.dx, conf::elementwise_tolerance(c.x, max_abs(back.dx)), &back.dx_magnitude, c.hidden);
  if (!run.dgamma.empty()) {
    conf::Tolerance t = conf::row_sum_tolerance(c.x);
    if (c.grad_weight.bits == 16) t.ulps = 2, t.dtype = c.grad_weight;
    compare(failures, "dgamma", run.dgamma, back.dgamma, t, &back.dgamma_scale);
  }
  if (!run.dbeta.empty()) {
    conf::Tolerance t = conf::row_sum_tolerance(c.x);
    if (c.grad_weight.bits == 16) t.ulps = 2, t.dtype = c.grad_weight;
    compare(failures, "dbeta", run.dbeta, back.dbeta, t, &back.dbeta_scale);
  }
  return failures;
}

}  // namespace switchyard::fused::test
