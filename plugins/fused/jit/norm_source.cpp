#include "norm_source.hpp"

#include "source_prelude.hpp"

#include <algorithm>

namespace switchyard::fused::jit {
namespace {

int64_t power_of_two_at_least(int64_t value) {
  int64_t p = 1;
  while (p < value) p *= 2;
  return p;
}

// The kernels. Constants (kH, kThreads, ...) are emitted before this text by norm_source().
constexpr const char* kNormKernels = R"SY(
typedef SyStorage<kXType>::type sy_x_t;
typedef SyStorage<kYType>::type sy_y_t;
typedef SyStorage<kWType>::type sy_w_t;
typedef SyStorage<kGWType>::type sy_gw_t;

template <class T> SY_DEVICE const T* sy_row(const void* base, sy_i64 stride, sy_i64 row) {
  return reinterpret_cast<const T*>(static_cast<const char*>(base) + row * stride);
}
template <class T> SY_DEVICE T* sy_row_out(void* base, sy_i64 stride, sy_i64 row) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + row * stride);
}
// This thread's group `it` covers columns [sy_column(it), + kVec); sy_valid of them exist.
SY_DEVICE sy_i64 sy_column(int it) { return ((sy_i64)it * kThreads + SY_THREAD_X) * kVec; }
SY_DEVICE int sy_valid(sy_i64 column) {
  return (int)sy_max<sy_i64>(0, sy_min<sy_i64>(kH - column, kVec));
}

// Loads this thread's columns of a row of dtype D (0 past the row's end).
template <int D>
SY_DEVICE void sy_load_row(const typename SyStorage<D>::type* row, float (&out)[kIters][kVec]) {
  const bool vector = sy_aligned<D, kVec>(row);
  SY_UNROLL
  for (int it = 0; it < kIters; ++it) {
    const sy_i64 column = sy_column(it);
    const int valid = sy_valid(column);
    if (valid > 0) {
      sy_load<D, kVec>(row + column, out[it], vector, valid);
    } else {
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) out[it][e] = 0.0f;
    }
  }
}

template <int D>
SY_DEVICE void sy_store_row(typename SyStorage<D>::type* row, const float (&in)[kIters][kVec]) {
  const bool vector = sy_aligned<D, kVec>(row);
  SY_UNROLL
  for (int it = 0; it < kIters; ++it) {
    const sy_i64 column = sy_column(it);
    const int valid = sy_valid(column);
    if (valid > 0) sy_store<D, kVec>(row + column, in[it], vector, valid);
  }
}

// gamma_eff and beta of this thread's columns: gamma (+ 1 when zero-centred, in fp32), 1 for
// L2; beta, or 0 without bias.
SY_DEVICE void sy_load_parameters(const SyNormArgs& a, float (&gamma)[kIters][kVec],
                                  float (&beta)[kIters][kVec]) {
  if constexpr (kKind == 2) {
    SY_UNROLL
    for (int it = 0; it < kIters; ++it)
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) gamma[it][e] = 1.0f;
  } else {
    sy_load_row<kWType>(static_cast<const sy_w_t*>(a.weight), gamma);
    if constexpr (kZeroCentered) {
      SY_UNROLL
      for (int it = 0; it < kIters; ++it)
        SY_UNROLL
        for (int e = 0; e < kVec; ++e) gamma[it][e] += 1.0f;
    }
  }
  if (kKind == 0 && (a.flags & 1) != 0) {
    sy_load_row<kWType>(static_cast<const sy_w_t*>(a.bias), beta);
  } else {
    SY_UNROLL
    for (int it = 0; it < kIters; ++it)
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) beta[it][e] = 0.0f;
  }
}

// ---- forward: one block per row ----
SY_KERNEL(kThreads) sy_norm_forward(const SyNormArgs a) {
  const sy_i64 row = SY_BLOCK_X;
  float h[kIters][kVec];
  sy_load_row<kXType>(sy_row<sy_x_t>(a.x, a.x_stride, row), h);
  if constexpr (kResidual) {
    float r[kIters][kVec];
    sy_load_row<kXType>(sy_row<sy_x_t>(a.residual, a.residual_stride, row), r);
    SY_UNROLL
    for (int it = 0; it < kIters; ++it)
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) h[it][e] = sy_round<kXType>(h[it][e] + r[it][e]);
    sy_store_row<kXType>(sy_row_out<sy_x_t>(a.residual_out, a.residual_out_stride, row), h);
  }
  float mean = 0.0f;
  float rstd;
  if constexpr (kKind == 0) {
    float sum = 0.0f;
    SY_UNROLL
    for (int it = 0; it < kIters; ++it)
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) sum += h[it][e];  // 0 past the row's end
    mean = sy_block_sum<kThreads>(sum) / (float)kH;
    float squares = 0.0f;
    SY_UNROLL
    for (int it = 0; it < kIters; ++it) {
      const int valid = sy_valid(sy_column(it));
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) {
        const float centred = h[it][e] - mean;
        if (e < valid) squares += centred * centred;
      }
    }
    const float variance = sy_block_sum<kThreads>(squares) / (float)kH;
    rstd = 1.0f / sy_sqrtf(variance + (float)a.eps);
  } else {
    float squares = 0.0f;
    SY_UNROLL
    for (int it = 0; it < kIters; ++it)
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) squares += h[it][e] * h[it][e];
    rstd = 1.0f / sy_sqrtf(sy_block_sum<kThreads>(squares) / (float)kH + (float)a.eps);
  }
  float gamma[kIters][kVec], beta[kIters][kVec];
  sy_load_parameters(a, gamma, beta);
  SY_UNROLL
  for (int it = 0; it < kIters; ++it)
    SY_UNROLL
    for (int e = 0; e < kVec; ++e) {
      const float x_hat = (kKind == 0 ? h[it][e] - mean : h[it][e]) * rstd;
      h[it][e] = kKind == 2 ? x_hat : x_hat * gamma[it][e] + beta[it][e];
    }
  sy_store_row<kYType>(sy_row_out<sy_y_t>(a.y, a.y_stride, row), h);
  if (SY_THREAD_X == 0) {
    if constexpr (kKind == 0) a.mean[row] = mean;
    a.rstd[row] = rstd;
  }
}

// ---- backward: one block per chunk of rows; dx per row, partial dgamma/dbeta per chunk ----
// Two blocks per SM at least: a chunk's rows are processed one after the other, so the
// latency of one block's loads must hide behind another block.
SY_KERNEL_OCCUPANCY(kThreads, 2) sy_norm_backward(const SyNormArgs a) {
  const sy_i64 chunk = SY_BLOCK_X;
  const sy_i64 first = chunk * kRowsPerChunk;
  const sy_i64 end = sy_min<sy_i64>(first + kRowsPerChunk, a.rows);
  const bool want_dweight = kKind != 2 && (a.flags & 2) != 0;
  const bool want_dbias = kKind == 0 && (a.flags & 4) != 0;
  const bool has_d_residual = kResidual && (a.flags & 8) != 0;
  float acc_dweight[kIters][kVec], acc_dbias[kIters][kVec];
  SY_UNROLL
  for (int it = 0; it < kIters; ++it)
    SY_UNROLL
    for (int e = 0; e < kVec; ++e) acc_dweight[it][e] = acc_dbias[it][e] = 0.0f;

  for (sy_i64 row = first; row < end; ++row) {
    // gamma/beta are read again for every row (from L1): holding them across rows would
    // cost the registers that keep two blocks per SM.
    float gamma[kIters][kVec], beta[kIters][kVec];
    sy_load_parameters(a, gamma, beta);
    float dy[kIters][kVec], x_hat[kIters][kVec];
    sy_load_row<kYType>(sy_row<sy_y_t>(a.dy, a.dy_stride, row), dy);
    const float rstd = a.rstd_in[row];
    if constexpr (kMemoryEfficient) {
      sy_load_row<kYType>(sy_row<sy_y_t>(a.x_or_y, a.x_or_y_stride, row), x_hat);  // y
      SY_UNROLL
      for (int it = 0; it < kIters; ++it)
        SY_UNROLL
        for (int e = 0; e < kVec; ++e)
          if (kKind != 2) x_hat[it][e] = (x_hat[it][e] - beta[it][e]) / gamma[it][e];
    } else {
      sy_load_row<kXType>(sy_row<sy_x_t>(a.x_or_y, a.x_or_y_stride, row), x_hat);  // h
      const float mean = kKind == 0 ? a.mean_in[row] : 0.0f;
      SY_UNROLL
      for (int it = 0; it < kIters; ++it)
        SY_UNROLL
        for (int e = 0; e < kVec; ++e) x_hat[it][e] = (x_hat[it][e] - mean) * rstd;
    }
    // gh = dy * gamma_eff; only the row's own columns take part (past the end, x_hat of the
    // memory-efficient form is 0/0).
    float sum_gh = 0.0f, sum_gh_xhat = 0.0f;
    SY_UNROLL
    for (int it = 0; it < kIters; ++it) {
      const int valid = sy_valid(sy_column(it));
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) {
        if (e < valid) {
          acc_dweight[it][e] += dy[it][e] * x_hat[it][e];
          acc_dbias[it][e] += dy[it][e];
          dy[it][e] = kKind == 2 ? dy[it][e] : dy[it][e] * gamma[it][e];  // now gh
          sum_gh += dy[it][e];
          sum_gh_xhat += dy[it][e] * x_hat[it][e];
        } else {
          dy[it][e] = 0.0f;
          x_hat[it][e] = 0.0f;
        }
      }
    }
    float mean_gh = 0.0f;
    if constexpr (kKind == 0) mean_gh = sy_block_sum<kThreads>(sum_gh) / (float)kH;
    const float mean_gh_xhat = sy_block_sum<kThreads>(sum_gh_xhat) / (float)kH;
    float d_residual[kIters][kVec];
    if (has_d_residual)
      sy_load_row<kXType>(sy_row<sy_x_t>(a.d_residual_out, a.d_residual_out_stride, row), d_residual);
    SY_UNROLL
    for (int it = 0; it < kIters; ++it)
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) {
        float dx = rstd * (dy[it][e] - mean_gh - x_hat[it][e] * mean_gh_xhat);
        if (has_d_residual) dx += d_residual[it][e];
        dy[it][e] = dx;
      }
    sy_store_row<kXType>(sy_row_out<sy_x_t>(a.dx, a.dx_stride, row), dy);
  }
  if (want_dweight) sy_store_row<0>(a.ws_dweight + chunk * kH, acc_dweight);
  if (want_dbias) sy_store_row<0>(a.ws_dbias + chunk * kH, acc_dbias);
}

// ---- dgamma/dbeta: the chunks' partial sums, in chunk order ----
SY_KERNEL(kColumnThreads) sy_norm_dweight(const SyNormArgs a) {
  const sy_i64 column = SY_BLOCK_X * kColumnThreads + SY_THREAD_X;
  if (column >= kH) return;
  if (kKind != 2 && (a.flags & 2) != 0) {
    float sum = 0.0f;
    for (sy_i64 c = 0; c < a.chunks; ++c) sum += a.ws_dweight[c * kH + column];
    if constexpr (kAccumulate) static_cast<float*>(a.dweight)[column] += sum;
    else static_cast<sy_gw_t*>(a.dweight)[column] = sy_from_f32<kGWType>(sum);
  }
  if (kKind == 0 && (a.flags & 4) != 0) {
    float sum = 0.0f;
    for (sy_i64 c = 0; c < a.chunks; ++c) sum += a.ws_dbias[c * kH + column];
    if constexpr (kAccumulate) static_cast<float*>(a.dbias)[column] += sum;
    else static_cast<sy_gw_t*>(a.dbias)[column] = sy_from_f32<kGWType>(sum);
  }
}
)SY";

std::string flag(bool value) { return value ? "true" : "false"; }

const char* kind_name(NormKind kind) {
  switch (kind) {
    case NormKind::Layer: return "LayerNorm";
    case NormKind::Rms: return "RMSNorm";
    case NormKind::L2: return "L2Norm";
  }
  return "?";
}

}  // namespace

NormSpecialization NormSpecialization::canonical() const {
  NormSpecialization c = *this;
  if (kind == NormKind::L2) {
    c.weight = c.grad_weight = DType::F32;
    c.zero_centered = c.accumulate = false;
  }
  return c;
}

std::string NormSpecialization::description() const {
  std::string d = std::string("norm ") + kind_name(kind) + " H=" + std::to_string(hidden) +
                  " x=" + dtype_short_name(x) + " y=" + dtype_short_name(y);
  if (kind != NormKind::L2)
    d += std::string(" weight=") + dtype_short_name(weight) + " grad_weight=" + dtype_short_name(grad_weight);
  if (zero_centered) d += " zero_centered_gamma";
  if (residual) d += " residual";
  if (memory_efficient) d += " memory_efficient";
  if (accumulate) d += " accumulate_grad_weight";
  return d;
}

NormLayout NormLayout::of(const NormSpecialization& spec) {
  NormLayout layout;
  layout.vec = 16 / bytes_of(spec.x);
  const int64_t groups = (spec.hidden + layout.vec - 1) / layout.vec;
  // About two vector groups per thread: enough loads in flight, few registers.
  layout.threads = static_cast<int>(std::clamp<int64_t>(power_of_two_at_least((groups + 1) / 2), 32, 1024));
  layout.iters = static_cast<int>((groups + layout.threads - 1) / layout.threads);
  // About 2^17 elements per backward block: few partial rows in the workspace, enough blocks.
  layout.rows_per_chunk = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 17) / spec.hidden, 4, 64));
  return layout;
}

const std::vector<std::string>& norm_kernel_names() {
  static const std::vector<std::string> names = {"sy_norm_forward", "sy_norm_backward",
                                                 "sy_norm_dweight"};
  return names;
}

std::string norm_source(const NormSpecialization& requested) {
  const NormSpecialization spec = requested.canonical();
  const NormLayout layout = NormLayout::of(spec);
  std::string out = "// switchyard fused JIT: " + spec.description() + "\n";
  out += source_prelude();
  out += "\n// ---- specialisation ----\n";
  out += "constexpr int kKind = " + std::to_string(static_cast<int>(spec.kind)) + ";\n";
  out += "constexpr sy_i64 kH = " + std::to_string(spec.hidden) + ";\n";
  out += "constexpr int kXType = " + std::to_string(static_cast<int>(spec.x)) + ";\n";
  out += "constexpr int kYType = " + std::to_string(static_cast<int>(spec.y)) + ";\n";
  out += "constexpr int kWType = " + std::to_string(static_cast<int>(spec.weight)) + ";\n";
  out += "constexpr int kGWType = " + std::to_string(static_cast<int>(spec.grad_weight)) + ";\n";
  out += "constexpr bool kZeroCentered = " + flag(spec.zero_centered) + ";\n";
  out += "constexpr bool kResidual = " + flag(spec.residual) + ";\n";
  out += "constexpr bool kMemoryEfficient = " + flag(spec.memory_efficient) + ";\n";
  out += "constexpr bool kAccumulate = " + flag(spec.accumulate) + ";\n";
  out += "constexpr int kThreads = " + std::to_string(layout.threads) + ";\n";
  out += "constexpr int kVec = " + std::to_string(layout.vec) + ";\n";
  out += "constexpr int kIters = " + std::to_string(layout.iters) + ";\n";
  out += "constexpr int kRowsPerChunk = " + std::to_string(layout.rows_per_chunk) + ";\n";
  out += "constexpr int kColumnThreads = " + std::to_string(kNormColumnThreads) + ";\n";
  out += kNormKernels;
  return out;
}

}  // namespace switchyard::fused::jit
