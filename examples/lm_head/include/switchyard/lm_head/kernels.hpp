// The LM head's own compute, behind an interface so that a device other than the CPU can
// supply it. Pointers are device pointers of the Device that handed out the Kernels; matrices
// are dense and row-major. Every kernel is deterministic: each output element is computed by
// one thread in a fixed order, so results do not depend on the thread count, and the
// projection kernels compute a vocabulary column the same way whatever shard holds it.
#ifndef SWITCHYARD_LM_HEAD_KERNELS_HPP
#define SWITCHYARD_LM_HEAD_KERNELS_HPP

#include <cstdint>

namespace switchyard::lm_head {

struct AdamHyper {
  float lr = 1e-2f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  int64_t step = 1;  // 1-based, for bias correction
};

class Kernels {
 public:
  virtual ~Kernels() = default;

  // out[i, :] = table[ids[i], :]; table is [table_rows, width], out [n, width].
  virtual void gather_rows(const float* table, const int64_t* ids, int64_t n, int64_t width,
                           float* out) const = 0;
  // table_grad[ids[i], :] += rows[i, :], rows added in order i = 0..n-1.
  virtual void scatter_add_rows(const float* rows, const int64_t* ids, int64_t n,
                                int64_t width, float* table_grad) const = 0;

  // logits[n, vp] = y[n, h] · w[h, vp]
  virtual void project(const float* y, const float* w, int64_t n, int64_t h, int64_t vp,
                       float* logits) const = 0;
  // dy[n, h] = Σ_j dlogits[n, j] · w[h, j], accumulated and returned in double so that the
  // sum over the vocabulary, split over ranks and all-reduced, rounds to the same float
  // whatever the split.
  virtual void project_grad_input(const float* dlogits, const float* w, int64_t n, int64_t h,
                                  int64_t vp, double* dy) const = 0;
  // dw[h, vp] = y^T · dlogits (overwrites dw)
  virtual void project_grad_weight(const float* y, const float* dlogits, int64_t n, int64_t h,
                                   int64_t vp, float* dw) const = 0;

  virtual void fill(float* out, int64_t count, float value) const = 0;
  virtual void to_float(const double* in, int64_t count, float* out) const = 0;
  // Mean of `count` values, summed in double in index order; returned to the host.
  virtual double mean(const float* values, int64_t count) const = 0;

  // param -= lr * grad
  virtual void sgd_step(float* param, const float* grad, int64_t count, float lr) const = 0;
  // Adam (Kingma & Ba) with bias correction; m and v start at zero.
  virtual void adam_step(float* param, const float* grad, float* m, float* v, int64_t count,
                         const AdamHyper& hyper) const = 0;
};

}  // namespace switchyard::lm_head

#endif
