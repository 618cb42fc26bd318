// The smallest Switchyard host: select backends from the environment / command line, bind a
// cross entropy and an RMSNorm for one problem, run forward and backward once on the CPU.
//   ./switchyard_quickstart [--cross-entropy native] [--norm native] ...
#include <switchyard/switchyard.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

DLTensor tensor(void* data, DLDataType dtype, std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int>(shape.size());
  t.dtype = dtype;
  t.shape = shape.data();
  return t;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

}  // namespace

int main(int argc, char** argv) try {
  switchyard::RuntimeOptions options;
  options.args.assign(argv + 1, argv + argc);
  const switchyard::Runtime runtime(options);

  const int64_t rows = 4, hidden = 8, vocab = 16;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;

  // RMSNorm of a [rows, hidden] activation.
  sy_norm_problem norm_problem{};
  norm_problem.struct_size = sizeof norm_problem;
  norm_problem.kind = SY_NORM_RMS;
  norm_problem.rows = rows;
  norm_problem.hidden = hidden;
  norm_problem.eps = 1e-5f;
  norm_problem.x_dtype = norm_problem.y_dtype = kF32;
  norm_problem.weight_dtype = norm_problem.grad_weight_dtype = kF32;
  norm_problem.device = DLDevice{kDLCPU, 0};
  const switchyard::Norm norm = runtime.norm(norm_problem);

  std::vector<float> x(rows * hidden), gamma(hidden, 1.0f), y(rows * hidden), rstd(rows);
  for (float& v : x) v = normal(rng);
  std::vector<int64_t> shape_nh{rows, hidden}, shape_h{hidden}, shape_n{rows};
  DLTensor tx = tensor(x.data(), kF32, shape_nh), tg = tensor(gamma.data(), kF32, shape_h),
           ty = tensor(y.data(), kF32, shape_nh), tr = tensor(rstd.data(), kF32, shape_n);
  std::vector<unsigned char> norm_ws(static_cast<size_t>(norm.workspace_size()));
  sy_norm_forward_args nf{};
  nf.struct_size = sizeof nf;
  nf.x = &tx;
  nf.weight = &tg;
  nf.y = &ty;
  nf.rstd = &tr;
  nf.workspace = norm_ws.data();
  nf.workspace_bytes = static_cast<int64_t>(norm_ws.size());
  norm.forward(nf);

  // Cross entropy of [rows, vocab] logits.
  sy_ce_problem ce_problem{};
  ce_problem.struct_size = sizeof ce_problem;
  ce_problem.rows = rows;
  ce_problem.vocab_local = ce_problem.vocab_size = vocab;
  ce_problem.logits_dtype = ce_problem.grad_dtype = kF32;
  ce_problem.label_dtype = kI64;
  ce_problem.device = DLDevice{kDLCPU, 0};
  ce_problem.tp_size = 1;
  const switchyard::CrossEntropy ce = runtime.cross_entropy(ce_problem);

  std::vector<float> logits(rows * vocab), loss(rows), lse(rows), grad_loss(rows, 1.0f),
      grad(rows * vocab);
  std::vector<int64_t> labels{1, 5, 9, 15};
  for (float& v : logits) v = normal(rng);
  std::vector<int64_t> shape_nv{rows, vocab};
  DLTensor tl = tensor(logits.data(), kF32, shape_nv), tlab = tensor(labels.data(), kI64, shape_n),
           tloss = tensor(loss.data(), kF32, shape_n), tlse = tensor(lse.data(), kF32, shape_n),
           tgl = tensor(grad_loss.data(), kF32, shape_n), tgrad = tensor(grad.data(), kF32, shape_nv);
  std::vector<unsigned char> ce_ws(static_cast<size_t>(ce.workspace_size()));
  sy_ce_forward_args cf{};
  cf.struct_size = sizeof cf;
  cf.logits = &tl;
  cf.labels = &tlab;
  cf.loss = &tloss;
  cf.lse = &tlse;
  cf.workspace = ce_ws.data();
  cf.workspace_bytes = static_cast<int64_t>(ce_ws.size());
  ce.forward(cf);
  sy_ce_backward_args cb{};
  cb.struct_size = sizeof cb;
  cb.logits = &tl;
  cb.labels = &tlab;
  cb.lse = &tlse;
  cb.grad_loss = &tgl;
  cb.grad_logits = &tgrad;
  cb.workspace = ce_ws.data();
  cb.workspace_bytes = static_cast<int64_t>(ce_ws.size());
  ce.backward(cb);

  // A gradient row of softmax cross entropy sums to zero: a cheap sanity check.
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < vocab; ++j) sum += grad[i * vocab + j];
    if (std::fabs(sum) > 1e-5 || !std::isfinite(loss[i])) {
      std::fprintf(stderr, "quickstart: row %lld: gradient sums to %g, loss %g\n",
                   static_cast<long long>(i), sum, loss[i]);
      return 1;
    }
  }
  std::printf("cross entropy: %s %s (%s)\n", ce.backend().name.c_str(),
              ce.backend().version.c_str(), ce.backend().path.c_str());
  std::printf("norm:          %s %s (%s)\n", norm.backend().name.c_str(),
              norm.backend().version.c_str(), norm.backend().path.c_str());
  std::printf("loss[0..3] = %.4f %.4f %.4f %.4f, rstd[0] = %.4f\nquickstart: ok\n", loss[0],
              loss[1], loss[2], loss[3], rstd[0]);
  return 0;
} catch (const switchyard::Error& e) {
  std::fprintf(stderr, "quickstart: %s\n", e.what());
  return 1;
}
