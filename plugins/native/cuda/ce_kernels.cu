// The cross-entropy kernels: one per eager op of Megatron's vocab-parallel cross entropy,
// deliberately unfused (this is the baseline the fused backends are measured against).
// Row reductions use one block of kRowThreads per row with a fixed tree, so a row's results
// are bit-identical from run to run and do not depend on the other rows of the batch.
#include "ce_kernels.hpp"
#include "device_math.cuh"
#include "launch_geometry.cuh"

namespace switchyard::native::cuda {
namespace {

constexpr int kRowThreads = 512;

template <class F>
cudaError_t with_type(Dtype type, F&& f) {
  switch (type) {
    case Dtype::F32: return f(float{});
    case Dtype::BF16: return f(__nv_bfloat16{});
    default: return f(__half{});
  }
}

__global__ void check_labels_kernel(const void* labels, int64_t rows, LabelRule rule,
                                    unsigned long long* first_bad) {
  SY_FOR_ROW_THREADS(i, rows) {
    const int64_t t = load_label(labels, rule.labels64, i);
    if (is_ignored(rule, t) || (t >= 0 && t < rule.vocab_size)) continue;
    atomicMin(first_bad, static_cast<unsigned long long>(i));
  }
}

template <class T>
__global__ void upcast_kernel(const T* logits, int64_t row_stride, int64_t rows, int64_t vp,
                              float* z) {
  SY_FOR_ROWS_Y(i, rows) {
    const T* src = logits + i * row_stride;
    float* dst = z + i * vp;
    SY_FOR_COLUMNS_X(j, vp) dst[j] = to_float(src[j]);
  }
}

__global__ void __launch_bounds__(kRowThreads)
    row_max_kernel(const float* z, int64_t rows, int64_t vp, float* row_max,
                   int64_t* row_argmax) {
  __shared__ float values[kRowThreads / kWarp];
  __shared__ int64_t indices[kRowThreads / kWarp];
  SY_FOR_ROW_BLOCKS(i, rows) {
    const float* row = z + i * vp;
    MaxAt m{-INFINITY, INT64_MAX};
    SY_FOR_BLOCK_COLUMNS(j, vp) {
      const float v = row[j];
      if (beats(v, j, m.value, m.index)) m = MaxAt{v, j};
    }
    m = block_max_at(m, values, indices);
    if (threadIdx.x == 0) {
      row_max[i] = m.value;
      row_argmax[i] = m.index;
    }
  }
}

__global__ void argmax_candidates_kernel(const float* local_max, const float* global_max,
                                         int64_t vocab_start, int64_t rows, int64_t* argmax) {
  SY_FOR_ROW_THREADS(i, rows) {
    const float local = local_max[i];
    const float global = global_max[i];
    const bool holds_max = local == global || (isnan(local) && isnan(global));
    argmax[i] = holds_max ? vocab_start + argmax[i] : INT64_MAX;
  }
}

__global__ void subtract_max_kernel(float* z, int64_t rows, int64_t vp, const float* row_max) {
  SY_FOR_ROWS_Y(i, rows) {
    float* row = z + i * vp;
    const float m = row_max[i];
    SY_FOR_COLUMNS_X(j, vp) row[j] -= m;
  }
}

__global__ void gather_target_kernel(const float* z, int64_t rows, int64_t vp,
                                     const void* labels, LabelRule rule, float* target) {
  SY_FOR_ROW_THREADS(i, rows) {
    const int64_t t = load_label(labels, rule.labels64, i);
    const int64_t column = is_ignored(rule, t) ? -1 : local_column(rule, t);
    target[i] = column >= 0 ? z[i * vp + column] : 0.0f;
  }
}

__global__ void __launch_bounds__(kRowThreads)
    row_sum_kernel(const float* z, int64_t rows, int64_t vp, float* sums) {
  __shared__ double partial[kRowThreads / kWarp];
  SY_FOR_ROW_BLOCKS(i, rows) {
    const float* row = z + i * vp;
    double sum = 0.0;
    SY_FOR_BLOCK_COLUMNS(j, vp) sum += row[j];
    sum = block_sum(sum, partial);
    if (threadIdx.x == 0) sums[i] = static_cast<float>(sum);
  }
}

__global__ void exp_kernel(float* z, int64_t rows, int64_t vp) {
  SY_FOR_ROWS_Y(i, rows) {
    float* row = z + i * vp;
    SY_FOR_COLUMNS_X(j, vp) row[j] = expf(row[j]);
  }
}

__global__ void loss_kernel(LossArgs a) {
  const double s = a.smoothing;
  const double vocab = static_cast<double>(a.rule.vocab_size);
  SY_FOR_ROW_THREADS(i, a.rows) {
    const double log_sum = log(static_cast<double>(a.sum_exp[i]));
    a.lse[i] = static_cast<float>(static_cast<double>(a.global_max[i]) + log_sum);
    const int64_t t = load_label(a.labels, a.rule.labels64, i);
    if (is_ignored(a.rule, t)) {
      a.loss[i] = 0.0f;
    } else {
      const double ce = log_sum - static_cast<double>(a.target[i]);
      const double smooth =
          s != 0.0 ? log_sum - static_cast<double>(a.sum_shifted[i]) / vocab : 0.0;
      a.loss[i] = static_cast<float>((1.0 - s) * ce + s * smooth);
    }
    if (a.argmax_out != nullptr) a.argmax_out[i] = a.argmax_in[i];
  }
}

template <class G>
__global__ void forward_grad_kernel(ForwardGradArgs a, G* grad) {
  SY_FOR_ROWS_Y(i, a.rows) {
    const int64_t t = load_label(a.labels, a.rule.labels64, i);
    const bool ignored = is_ignored(a.rule, t);
    const int64_t column = ignored ? -1 : local_column(a.rule, t);
    const double g = ignored ? 0.0 : static_cast<double>(a.grad_scale[i]);
    const double inverse_sum = 1.0 / static_cast<double>(a.sum_exp[i]);
    const double target_term = g * (1.0 - a.smoothing.weight);
    const float* e = a.exp_z + i * a.vocab_local;
    G* out = grad + i * a.grad.row_stride;
    SY_FOR_COLUMNS_X(j, a.vocab_local) {
      double v = 0.0;
      if (!ignored) {
        v = g * (static_cast<double>(e[j]) * inverse_sum - a.smoothing.uniform);
        if (j == column) v -= target_term;
      }
      store_as(out + j, v);
    }
  }
}

// p = exp(z - lse) with z - lse formed exactly in double and split into hi + lo, so the fp32
// exp sees no rounding of the difference: exp(hi) * (1 + lo) = exp(z - lse)(1 + O(lo^2)).
__device__ __forceinline__ double softmax_of(float z, float lse) {
  const double d = static_cast<double>(z) - static_cast<double>(lse);
  const float hi = static_cast<float>(d);
  const double lo = d - static_cast<double>(hi);
  return static_cast<double>(expf(hi)) * (1.0 + lo);
}

// No __restrict__: grad may be the logits themselves (each element is read before its own
// thread writes it).
template <class T, class G>
__global__ void backward_kernel(BackwardArgs a, const T* logits, G* grad) {
  SY_FOR_ROWS_Y(i, a.rows) {
    const int64_t t = load_label(a.labels, a.rule.labels64, i);
    const bool ignored = is_ignored(a.rule, t);
    const int64_t column = ignored ? -1 : local_column(a.rule, t);
    const double g = static_cast<double>(a.grad_loss[i]);
    const float lse = a.lse[i];
    const double target_term = g * (1.0 - a.smoothing.weight);
    const T* in = logits + i * a.logits.row_stride;
    G* out = grad + i * a.grad.row_stride;
    SY_FOR_COLUMNS_X(j, a.vocab_local) {
      double v = 0.0;
      if (!ignored) {
        v = g * (softmax_of(to_float(in[j]), lse) - a.smoothing.uniform);
        if (j == column) v -= target_term;
      }
      store_as(out + j, v);
    }
  }
}

bool nothing_to_do(int64_t rows, int64_t columns = 1) { return rows <= 0 || columns <= 0; }

}  // namespace

cudaError_t launch_check_labels(const void* labels, int64_t rows, const LabelRule& rule,
                                unsigned long long* first_bad, cudaStream_t stream) {
  if (nothing_to_do(rows)) return cudaSuccess;
  check_labels_kernel<<<per_row_grid(rows), kPerRowThreads, 0, stream>>>(labels, rows, rule,
                                                                         first_bad);
  return cudaGetLastError();
}

cudaError_t launch_upcast(const Matrix& logits, int64_t rows, int64_t vp, float* z,
                          cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  return with_type(logits.type, [&](auto tag) {
    using T = decltype(tag);
    upcast_kernel<T><<<element_grid(rows, vp), kElementThreads, 0, stream>>>(
        static_cast<const T*>(logits.data), logits.row_stride, rows, vp, z);
    return cudaGetLastError();
  });
}

cudaError_t launch_row_max(const float* z, int64_t rows, int64_t vp, float* row_max,
                           int64_t* row_argmax, cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  row_max_kernel<<<row_grid(rows), kRowThreads, 0, stream>>>(z, rows, vp, row_max, row_argmax);
  return cudaGetLastError();
}

cudaError_t launch_argmax_candidates(const float* local_max, const float* global_max,
                                     int64_t vocab_start, int64_t rows, int64_t* argmax,
                                     cudaStream_t stream) {
  if (nothing_to_do(rows)) return cudaSuccess;
  argmax_candidates_kernel<<<per_row_grid(rows), kPerRowThreads, 0, stream>>>(
      local_max, global_max, vocab_start, rows, argmax);
  return cudaGetLastError();
}

cudaError_t launch_subtract_max(float* z, int64_t rows, int64_t vp, const float* row_max,
                                cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  subtract_max_kernel<<<element_grid(rows, vp), kElementThreads, 0, stream>>>(z, rows, vp,
                                                                               row_max);
  return cudaGetLastError();
}

cudaError_t launch_gather_target(const float* z, int64_t rows, int64_t vp, const void* labels,
                                 const LabelRule& rule, float* target, cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  gather_target_kernel<<<per_row_grid(rows), kPerRowThreads, 0, stream>>>(z, rows, vp, labels,
                                                                          rule, target);
  return cudaGetLastError();
}

cudaError_t launch_row_sum(const float* z, int64_t rows, int64_t vp, float* sums,
                           cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  row_sum_kernel<<<row_grid(rows), kRowThreads, 0, stream>>>(z, rows, vp, sums);
  return cudaGetLastError();
}

cudaError_t launch_exp(float* z, int64_t rows, int64_t vp, cudaStream_t stream) {
  if (nothing_to_do(rows, vp)) return cudaSuccess;
  exp_kernel<<<element_grid(rows, vp), kElementThreads, 0, stream>>>(z, rows, vp);
  return cudaGetLastError();
}

cudaError_t launch_loss(const LossArgs& args, cudaStream_t stream) {
  if (nothing_to_do(args.rows)) return cudaSuccess;
  loss_kernel<<<per_row_grid(args.rows), kPerRowThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t launch_forward_grad(const ForwardGradArgs& args, cudaStream_t stream) {
  if (nothing_to_do(args.rows, args.vocab_local)) return cudaSuccess;
  return with_type(args.grad.type, [&](auto tag) {
    using G = decltype(tag);
    forward_grad_kernel<G><<<element_grid(args.rows, args.vocab_local), kElementThreads, 0,
                             stream>>>(args, static_cast<G*>(args.grad.data));
    return cudaGetLastError();
  });
}

cudaError_t launch_backward(const BackwardArgs& args, cudaStream_t stream) {
  if (nothing_to_do(args.rows, args.vocab_local)) return cudaSuccess;
  return with_type(args.logits.type, [&](auto logits_tag) {
    using T = decltype(logits_tag);
    return with_type(args.grad.type, [&](auto grad_tag) {
      using G = decltype(grad_tag);
      backward_kernel<T, G><<<element_grid(args.rows, args.vocab_local), kElementThreads, 0,
                              stream>>>(args, static_cast<const T*>(args.logits.data),
                                        static_cast<G*>(args.grad.data));
      return cudaGetLastError();
    });
  });
}

cudaError_t ce_kernel_image_status() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, row_max_kernel);
}

}  // namespace switchyard::native::cuda
