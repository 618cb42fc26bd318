// The per-thread work of every apex kernel, as plain functions of (params, row or chunk,
// thread index). The kernels (kernels.cuh) call them between their cross-thread reductions;
// the CPU tests call the very same functions for every emulated thread, so the indexing, the
// dtype handling and the formulas are checked here, on a machine without a GPU.
//
// Element ownership: a row is cut into chunks of 8 columns; the thread t of a row group of
// `threads` threads owns chunks t, t + threads, t + 2·threads, … (fast kernels: exactly
// chunks_per_thread of them). Every per-thread sum runs over its chunks in that order,
// elements in column order.
#ifndef SWITCHYARD_APEX_ROW_MATH_HPP
#define SWITCHYARD_APEX_ROW_MATH_HPP

#include "chunk_io.hpp"
#include "kernel_types.hpp"
#include "plan.hpp"
#include "welford.hpp"

namespace switchyard::apex {

SY_APEX_HD int64_t chunk_count(int64_t hidden) {
  return (hidden + kChunkElements - 1) / kChunkElements;
}
// Elements of chunk c that exist (8 except in the last chunk of a row with hidden % 8 != 0).
SY_APEX_HD int chunk_valid(int64_t hidden, int64_t c) {
  return static_cast<int>(min64(kChunkElements, hidden - c * kChunkElements));
}
// First column of the i-th chunk a fast-path thread owns.
SY_APEX_HD int64_t fast_offset(int i, int t, int threads) {
  return (static_cast<int64_t>(i) * threads + t) * kChunkElements;
}

// x̂ and γ_eff·dy of one chunk. x̂ = (v − mean)·rstd from x (mean = 0 for RMS/L2), or
// (v − β)/γ_eff from y in memory-efficient mode (β = 0 without a bias).
SY_APEX_HD void backward_terms(bool memory_efficient, float mean, float rstd,
                               const float (&v)[8], const float (&d)[8], const float (&g)[8],
                               const float (&b)[8], float (&xhat)[8], float (&gh)[8]) {
  SY_APEX_UNROLL
  for (int k = 0; k < 8; ++k) {
    xhat[k] = memory_efficient ? (v[k] - b[k]) * reciprocal(g[k]) : (v[k] - mean) * rstd;
    gh[k] = d[k] * g[k];
  }
}

// The β a backward needs: only memory-efficient mode reconstructs x̂ from y − β.
SY_APEX_HD void load_backward_beta(const BackwardParams& p, int64_t offset, bool vector,
                                   int valid, float (&b)[8]) {
  load_beta(p.memory_efficient ? p.bias : nullptr, p.weight_dtype, offset, vector, valid, b);
}

// The saved statistics of a row as the backward uses them.
SY_APEX_HD float backward_mean(const BackwardParams& p, int64_t row) {
  return p.kind == NormKind::Layer && !p.memory_efficient ? p.mean[row] : 0.0f;
}

// A row's (mean, rstd) from its merged statistics: Welford for LayerNorm, the sum of squares
// for RMS/L2 (whose x̂ uses mean = 0).
struct RowStatistics {
  float mean;
  float rstd;
};
SY_APEX_HD RowStatistics row_statistics(NormKind kind, const WelfordStats& welford,
                                        float sum_squares, int64_t hidden, float eps) {
  const float h = static_cast<float>(hidden);
  if (kind == NormKind::Layer) return RowStatistics{welford.mean, rstd_of(welford.m2 / h, eps)};
  return RowStatistics{0.0f, rstd_of(sum_squares / h, eps)};
}

// dx = rstd·(γ·dy − centre − x̂·slope): centre = mean(γ·dy) for LayerNorm (0 otherwise),
// slope = mean(γ·dy·x̂), from the row's sums.
struct DxCoefficients {
  float centre;
  float slope;
};
SY_APEX_HD DxCoefficients dx_coefficients(NormKind kind, float sum_gh, float sum_gh_xhat,
                                          int64_t hidden) {
  const float h = static_cast<float>(hidden);
  return DxCoefficients{kind == NormKind::Layer ? sum_gh / h : 0.0f, sum_gh_xhat / h};
}

// ---- forward, fast path: the row in registers -----------------------------------------------

template <class T, int CPT>
struct ForwardFastThread {
  Packed8<T> x[CPT];

  SY_APEX_HD void load(const ForwardParams& p, int64_t row, int t, int threads) {
    const T* xr = static_cast<const T*>(p.x) + row * p.x_stride;
    SY_APEX_UNROLL
    for (int i = 0; i < CPT; ++i) x[i] = load_packed(xr + fast_offset(i, t, threads), p.vector_access);
  }

  // Welford over this thread's 8·CPT values; the counts are compile-time constants, so the
  // update multiplies by a constant 1/n instead of dividing.
  SY_APEX_HD WelfordStats welford() const {
    float mean = 0.0f, m2 = 0.0f;
    SY_APEX_UNROLL
    for (int i = 0; i < CPT; ++i) {
      float v[8];
      unpack(x[i], v);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) {
        const float n = static_cast<float>(i * 8 + k + 1);
        const float delta = v[k] - mean;
        mean += delta * (1.0f / n);
        m2 += delta * (v[k] - mean);
      }
    }
    return WelfordStats{static_cast<float>(CPT * 8), mean, m2};
  }

  SY_APEX_HD float sum_squares() const {
    float s = 0.0f;
    SY_APEX_UNROLL
    for (int i = 0; i < CPT; ++i) {
      float v[8];
      unpack(x[i], v);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) s += v[k] * v[k];
    }
    return s;
  }

  // y = (x − mean)·rstd·γ_eff + β, rounded once to T (mean = 0 for RMS/L2).
  SY_APEX_HD void store(const ForwardParams& p, int64_t row, int t, int threads, float mean,
                        float rstd) const {
    T* yr = static_cast<T*>(p.y) + row * p.y_stride;
    SY_APEX_UNROLL
    for (int i = 0; i < CPT; ++i) {
      const int64_t offset = fast_offset(i, t, threads);
      float v[8], g[8], b[8], out[8];
      unpack(x[i], v);
      load_gamma(p.weight, p.weight_dtype, p.zero_centered_gamma, offset, p.vector_access, 8, g);
      load_beta(p.bias, p.weight_dtype, offset, p.vector_access, 8, b);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) out[k] = (v[k] - mean) * rstd * g[k] + b[k];
      store_chunk(yr + offset, p.vector_access, 8, out);
    }
  }
};

// ---- forward, general path: any hidden size, the row read twice -----------------------------

template <class Tx, class Ty>
struct ForwardGeneralThread {
  static SY_APEX_HD WelfordStats welford(const ForwardParams& p, int64_t row, int t,
                                         int threads) {
    const Tx* xr = static_cast<const Tx*>(p.x) + row * p.x_stride;
    const int64_t chunks = chunk_count(p.hidden);
    WelfordStats s = welford_empty();
    for (int64_t c = t; c < chunks; c += threads) {
      const int valid = chunk_valid(p.hidden, c);
      float v[8];
      load_chunk(xr + c * kChunkElements, p.vector_access, valid, v);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k)
        if (k < valid) welford_add(s, v[k]);
    }
    return s;
  }

  static SY_APEX_HD float sum_squares(const ForwardParams& p, int64_t row, int t, int threads) {
    const Tx* xr = static_cast<const Tx*>(p.x) + row * p.x_stride;
    const int64_t chunks = chunk_count(p.hidden);
    float s = 0.0f;
    for (int64_t c = t; c < chunks; c += threads) {
      const int valid = chunk_valid(p.hidden, c);
      float v[8];
      load_chunk(xr + c * kChunkElements, p.vector_access, valid, v);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) s += v[k] * v[k];  // absent elements read as 0
    }
    return s;
  }

  static SY_APEX_HD void store(const ForwardParams& p, int64_t row, int t, int threads,
                               float mean, float rstd) {
    const Tx* xr = static_cast<const Tx*>(p.x) + row * p.x_stride;
    Ty* yr = static_cast<Ty*>(p.y) + row * p.y_stride;
    const int64_t chunks = chunk_count(p.hidden);
    for (int64_t c = t; c < chunks; c += threads) {
      const int valid = chunk_valid(p.hidden, c);
      const int64_t offset = c * kChunkElements;
      float v[8], g[8], b[8], out[8];
      load_chunk(xr + offset, p.vector_access, valid, v);
      load_gamma(p.weight, p.weight_dtype, p.zero_centered_gamma, offset, p.vector_access, valid,
                 g);
      load_beta(p.bias, p.weight_dtype, offset, p.vector_access, valid, b);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) out[k] = (v[k] - mean) * rstd * g[k] + b[k];
      store_chunk(yr + offset, p.vector_access, valid, out);
    }
  }
};

// ---- backward, fused path: x (or y) and dy in registers, dγ/dβ chunk sums in registers ------

template <class T, int CPT, bool LAYER>
struct BackwardFusedThread {
  Packed8<T> in[CPT];  // x, or y in memory-efficient mode
  Packed8<T> dy[CPT];
  float acc_gamma[CPT][8];
  float acc_beta[LAYER ? CPT : 1][8];

  SY_APEX_HD void clear() {
    SY_APEX_UNROLL
    for (int i = 0; i < CPT; ++i) {
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) acc_gamma[i][k] = 0.0f;
    }
    if constexpr (LAYER) {
      SY_APEX_UNROLL
      for (int i = 0; i < CPT; ++i) {
        SY_APEX_UNROLL
        for (int k = 0; k < 8; ++k) acc_beta[i][k] = 0.0f;
      }
    }
  }

  SY_APEX_HD void load(const BackwardParams& p, int64_t row, int t, int threads) {
    const T* ir = static_cast<const T*>(p.x_or_y) + row * p.x_or_y_stride;
    const T* dr = static_cast<const T*>(p.dy) + row * p.dy_stride;
    SY_APEX_UNROLL
    for (int i = 0; i < CPT; ++i) {
      const int64_t offset = fast_offset(i, t, threads);
      in[i] = load_packed(ir + offset, p.vector_access);
      dy[i] = load_packed(dr + offset, p.vector_access);
    }
  }

  SY_APEX_HD void terms(const BackwardParams& p, int i, int t, int threads, float mean,
                        float rstd, float (&d)[8], float (&xhat)[8], float (&gh)[8]) const {
    const int64_t offset = fast_offset(i, t, threads);
    float v[8], g[8], b[8];
    unpack(in[i], v);
    unpack(dy[i], d);
    load_gamma(p.weight, p.weight_dtype, p.zero_centered_gamma, offset, p.vector_access, 8, g);
    load_backward_beta(p, offset, p.vector_access, 8, b);
    backward_terms(p.memory_efficient, mean, rstd, v, d, g, b, xhat, gh);
  }

  // Adds the loaded row to the chunk's dγ/dβ sums; returns this thread's Σ γ·dy and
  // Σ γ·dy·x̂.
  SY_APEX_HD void accumulate(const BackwardParams& p, int t, int threads, float mean, float rstd,
                             float& sum_gh, float& sum_gh_xhat) {
    sum_gh = 0.0f;
    sum_gh_xhat = 0.0f;
    SY_APEX_UNROLL
    for (int i = 0; i < CPT; ++i) {
      float d[8], xhat[8], gh[8];
      terms(p, i, t, threads, mean, rstd, d, xhat, gh);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) {
        sum_gh += gh[k];
        sum_gh_xhat += gh[k] * xhat[k];
        acc_gamma[i][k] += d[k] * xhat[k];
        if constexpr (LAYER) acc_beta[i][k] += d[k];
      }
    }
  }

  // dx = rstd·(γ·dy − centre − x̂·slope) with centre = mean(γ·dy) (LayerNorm; 0 otherwise)
  // and slope = mean(γ·dy·x̂), rounded once to T.
  SY_APEX_HD void store_dx(const BackwardParams& p, int64_t row, int t, int threads, float mean,
                           float rstd, float centre, float slope) const {
    T* xr = static_cast<T*>(p.dx) + row * p.dx_stride;
    SY_APEX_UNROLL
    for (int i = 0; i < CPT; ++i) {
      float d[8], xhat[8], gh[8], out[8];
      terms(p, i, t, threads, mean, rstd, d, xhat, gh);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) out[k] = rstd * (gh[k] - centre - xhat[k] * slope);
      store_chunk(xr + fast_offset(i, t, threads), p.vector_access, 8, out);
    }
  }

  // The chunk's sums into the workspace (fp32, 16-byte aligned: hidden % 8 == 0 here).
  SY_APEX_HD void write_partials(const BackwardParams& p, int64_t chunk, int t, int threads) const {
    if (p.partial_gamma != nullptr) {
      SY_APEX_UNROLL
      for (int i = 0; i < CPT; ++i)
        store_chunk(p.partial_gamma + chunk * p.hidden + fast_offset(i, t, threads), true, 8,
                    acc_gamma[i]);
    }
    if constexpr (LAYER) {
      if (p.partial_beta != nullptr) {
        SY_APEX_UNROLL
        for (int i = 0; i < CPT; ++i)
          store_chunk(p.partial_beta + chunk * p.hidden + fast_offset(i, t, threads), true, 8,
                      acc_beta[i]);
      }
    }
  }
};

// ---- backward, split path: dx per row (the row read twice), dγ/dβ per column ----------------

template <class Tx, class Ty, class Tin>
struct BackwardGeneralThread {
  static SY_APEX_HD void terms(const BackwardParams& p, int64_t row, int64_t c, int valid,
                               float mean, float rstd, float (&xhat)[8], float (&gh)[8]) {
    const int64_t offset = c * kChunkElements;
    const Tin* ir = static_cast<const Tin*>(p.x_or_y) + row * p.x_or_y_stride;
    const Ty* dr = static_cast<const Ty*>(p.dy) + row * p.dy_stride;
    float v[8], d[8], g[8], b[8];
    load_chunk(ir + offset, p.vector_access, valid, v);
    load_chunk(dr + offset, p.vector_access, valid, d);
    load_gamma(p.weight, p.weight_dtype, p.zero_centered_gamma, offset, p.vector_access, valid, g);
    load_backward_beta(p, offset, p.vector_access, valid, b);
    backward_terms(p.memory_efficient, mean, rstd, v, d, g, b, xhat, gh);
  }

  static SY_APEX_HD void sums(const BackwardParams& p, int64_t row, int t, int threads,
                              float mean, float rstd, float& sum_gh, float& sum_gh_xhat) {
    sum_gh = 0.0f;
    sum_gh_xhat = 0.0f;
    const int64_t chunks = chunk_count(p.hidden);
    for (int64_t c = t; c < chunks; c += threads) {
      const int valid = chunk_valid(p.hidden, c);
      float xhat[8], gh[8];
      terms(p, row, c, valid, mean, rstd, xhat, gh);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) {
        if (k < valid) {
          sum_gh += gh[k];
          sum_gh_xhat += gh[k] * xhat[k];
        }
      }
    }
  }

  static SY_APEX_HD void store_dx(const BackwardParams& p, int64_t row, int t, int threads,
                                  float mean, float rstd, float centre, float slope) {
    Tx* xr = static_cast<Tx*>(p.dx) + row * p.dx_stride;
    const int64_t chunks = chunk_count(p.hidden);
    for (int64_t c = t; c < chunks; c += threads) {
      const int valid = chunk_valid(p.hidden, c);
      float xhat[8], gh[8], out[8];
      terms(p, row, c, valid, mean, rstd, xhat, gh);
      SY_APEX_UNROLL
      for (int k = 0; k < 8; ++k) out[k] = rstd * (gh[k] - centre - xhat[k] * slope);
      store_chunk(xr + c * kChunkElements, p.vector_access, valid, out);
    }
  }
};

// One thread's share of the split path's dγ/dβ: chunk `c` of columns summed over the rows of
// row-chunk `chunk`, in row order (Apex's cuComputePartGradGammaBeta, with a fixed partition).
template <class Ty, class Tin>
SY_APEX_HD void column_partial(const BackwardParams& p, int64_t chunk, int64_t c) {
  const int64_t offset = c * kChunkElements;
  const int valid = chunk_valid(p.hidden, c);
  float g[8], b[8];
  load_gamma(p.weight, p.weight_dtype, p.zero_centered_gamma, offset, p.vector_access, valid, g);
  load_backward_beta(p, offset, p.vector_access, valid, b);
  float acc_gamma[8], acc_beta[8];
  SY_APEX_UNROLL
  for (int k = 0; k < 8; ++k) acc_gamma[k] = acc_beta[k] = 0.0f;
  const int64_t begin = chunk * p.rows_per_chunk;
  const int64_t end = min64(p.rows, begin + p.rows_per_chunk);
  for (int64_t row = begin; row < end; ++row) {
    const Tin* ir = static_cast<const Tin*>(p.x_or_y) + row * p.x_or_y_stride;
    const Ty* dr = static_cast<const Ty*>(p.dy) + row * p.dy_stride;
    float v[8], d[8], xhat[8], gh[8];
    load_chunk(ir + offset, p.vector_access, valid, v);
    load_chunk(dr + offset, p.vector_access, valid, d);
    backward_terms(p.memory_efficient, backward_mean(p, row), p.rstd[row], v, d, g, b, xhat, gh);
    SY_APEX_UNROLL
    for (int k = 0; k < 8; ++k) {
      acc_gamma[k] += d[k] * xhat[k];
      acc_beta[k] += d[k];
    }
  }
  const bool vector = p.hidden % kChunkElements == 0;  // the workspace is ours: aligned
  if (p.partial_gamma != nullptr)
    store_chunk(p.partial_gamma + chunk * p.hidden + offset, vector, valid, acc_gamma);
  if (p.partial_beta != nullptr)
    store_chunk(p.partial_beta + chunk * p.hidden + offset, vector, valid, acc_beta);
}

// ---- final sums over chunks -----------------------------------------------------------------

// Lane `lane` of kFinalLanes sums chunks lane, lane + kFinalLanes, … of one column in order.
SY_APEX_HD float final_lane_sum(const float* partial, int64_t hidden, int64_t chunks,
                                int64_t column, int lane) {
  float s = 0.0f;
  for (int64_t chunk = lane; chunk < chunks; chunk += kFinalLanes) s += partial[chunk * hidden + column];
  return s;
}

// Adds the lanes in lane order and writes (or, accumulating, adds into fp32) element `column`.
SY_APEX_HD void final_store(void* out, Dtype dtype, bool accumulate, int64_t column,
                            const float (&lanes)[kFinalLanes]) {
  float total = lanes[0];
  SY_APEX_UNROLL
  for (int w = 1; w < kFinalLanes; ++w) total += lanes[w];
  switch (dtype) {
    case Dtype::F32: {
      float* o = static_cast<float*>(out) + column;
      *o = accumulate ? *o + total : total;
      break;
    }
    case Dtype::BF16:
      store_element(static_cast<__nv_bfloat16*>(out) + column, total);
      break;
    default:
      store_element(static_cast<__half*>(out) + column, total);
      break;
  }
}

}  // namespace switchyard::apex

#endif
