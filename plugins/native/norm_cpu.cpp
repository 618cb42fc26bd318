#include "norm_cpu.hpp"

#include "norm_validate.hpp"
#include "row_io.hpp"
#include "thread_pool.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace switchyard::native {
namespace {

constexpr int64_t kAlignment = 64;
// Columns per dgamma/dbeta task: wide enough to read rows in contiguous runs, narrow enough to
// give every thread work at common hidden sizes.
constexpr int64_t kColumnBlock = 64;

bool has(const sy_norm_problem& p, uint32_t flag) { return (p.flags & flag) != 0; }

// gamma_eff (1 + gamma added in fp32 with ZERO_CENTERED_GAMMA) and beta (0 when absent), for
// LayerNorm/RMSNorm; L2Norm uses neither.
struct Parameters {
  const double* gamma = nullptr;  // [H], or NULL for L2
  const double* beta = nullptr;   // [H], or NULL (beta = 0)
};

Parameters prepare_parameters(const sy_norm_problem& p, const DLTensor* weight,
                              const DLTensor* bias, void* workspace) {
  Parameters out;
  if (p.kind == SY_NORM_L2) return out;
  const int64_t h = p.hidden;
  double* gamma = static_cast<double*>(workspace);
  double* beta = reinterpret_cast<double*>(static_cast<char*>(workspace) +
                                           sy::align_up(h * 8, kAlignment));
  const DataType weight_type = data_type(p.weight_dtype);
  if (has(p, SY_NORM_ZERO_CENTERED_GAMMA)) {
    float* as_float = reinterpret_cast<float*>(beta);  // beta's slot is free until below
    load_row(weight_type, sy::data_as<const void>(*weight), h, as_float);
    for (int64_t j = 0; j < h; ++j) gamma[j] = static_cast<double>(1.0f + as_float[j]);
  } else {
    load_row(weight_type, sy::data_as<const void>(*weight), h, gamma);
  }
  out.gamma = gamma;
  if (bias != nullptr) {
    load_row(weight_type, sy::data_as<const void>(*bias), h, beta);
    out.beta = beta;
  }
  return out;
}

struct RowStats {
  double mean = 0.0;  // 0 for RMS/L2
  double rstd = 0.0;
};

RowStats row_statistics(sy_norm_kind kind, const double* h, int64_t n, double eps) {
  RowStats s;
  const double count = static_cast<double>(n);
  if (kind == SY_NORM_LAYER) {
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) sum += h[j];
    s.mean = sum / count;
    double squares = 0.0;
    for (int64_t j = 0; j < n; ++j) squares += (h[j] - s.mean) * (h[j] - s.mean);
    s.rstd = 1.0 / std::sqrt(squares / count + eps);
  } else {
    double squares = 0.0;
    for (int64_t j = 0; j < n; ++j) squares += h[j] * h[j];
    s.rstd = 1.0 / std::sqrt(squares / count + eps);
  }
  return s;
}

// x-hat of `count` columns starting at `first` of one row, from the saved statistics (or from
// y with MEMORY_EFFICIENT), in place over `src`.
void normalised_input(const sy_norm_problem& p, const Parameters& params, double mean,
                      double rstd, int64_t first, int64_t count, double* src) {
  if (has(p, SY_NORM_MEMORY_EFFICIENT)) {
    if (p.kind == SY_NORM_L2) return;  // y is x-hat
    for (int64_t j = 0; j < count; ++j) {
      const double beta = params.beta != nullptr ? params.beta[first + j] : 0.0;
      src[j] = (src[j] - beta) / params.gamma[first + j];
    }
    return;
  }
  for (int64_t j = 0; j < count; ++j) src[j] = (src[j] - mean) * rstd;
}

void require_invertible_gamma(const sy_norm_problem& p, const Parameters& params) {
  if (!has(p, SY_NORM_MEMORY_EFFICIENT) || params.gamma == nullptr) return;
  for (int64_t j = 0; j < p.hidden; ++j)
    if (params.gamma[j] == 0.0)
      sy::fail(SY_ERR_INVALID_ARGUMENT,
               "weight[" + std::to_string(j) + "] makes gamma_eff = 0" +
                   (has(p, SY_NORM_ZERO_CENTERED_GAMMA) ? " (1 + gamma with zero-centred gamma)"
                                                        : std::string()) +
                   ", so SY_NORM_MEMORY_EFFICIENT cannot recover x-hat from y; use the backward "
                   "from x (clear the flag)");
}

// dgamma = sum_rows dy * x-hat, dbeta = sum_rows dy, per column block, rows in order.
void weight_gradients(const sy_norm_backward_args& a, const Parameters& params) {
  const sy_norm_problem& p = *a.problem;
  if (a.dweight == nullptr && a.dbias == nullptr) return;
  const int64_t n = p.rows;
  const int64_t h = p.hidden;
  const bool accumulate = has(p, SY_NORM_ACCUMULATE_GRAD_WEIGHT);
  const DataType dy_type = data_type(p.y_dtype);
  const DataType src_type = data_type(has(p, SY_NORM_MEMORY_EFFICIENT) ? p.y_dtype : p.x_dtype);
  const DataType grad_weight_type = data_type(p.grad_weight_dtype);
  const RowView dy(*a.dy);
  const RowView src(*a.x_or_y);
  const float* mean = p.kind == SY_NORM_LAYER && a.mean != nullptr && !has(p, SY_NORM_MEMORY_EFFICIENT)
                          ? sy::data_as<const float>(*a.mean)
                          : nullptr;
  const float* rstd = sy::data_as<const float>(*a.rstd);
  const int64_t blocks = (h + kColumnBlock - 1) / kColumnBlock;

  parallel_for(blocks, n * kColumnBlock, [&](int64_t block_begin, int64_t block_end, Scratch& scratch) {
    double* memory = scratch.doubles(4 * kColumnBlock);
    double* dy_part = memory;
    double* xhat = memory + kColumnBlock;
    double* sum_gamma = memory + 2 * kColumnBlock;
    double* sum_beta = memory + 3 * kColumnBlock;
    for (int64_t block = block_begin; block < block_end; ++block) {
      const int64_t first = block * kColumnBlock;
      const int64_t count = std::min(kColumnBlock, h - first);
      std::fill(sum_gamma, sum_gamma + count, 0.0);
      std::fill(sum_beta, sum_beta + count, 0.0);
      for (int64_t i = 0; i < n; ++i) {
        load_row(dy_type, dy.row(i) + first * dy.element_bytes, count, dy_part);
        load_row(src_type, src.row(i) + first * src.element_bytes, count, xhat);
        normalised_input(p, params, mean != nullptr ? mean[i] : 0.0, rstd[i], first, count, xhat);
        for (int64_t j = 0; j < count; ++j) {
          sum_gamma[j] += dy_part[j] * xhat[j];
          sum_beta[j] += dy_part[j];
        }
      }
      auto write = [&](DLTensor* out, double* sums) {
        if (out == nullptr) return;
        char* base = sy::data_as<char>(*out) + first * element_bytes(grad_weight_type);
        if (accumulate) {  // float32, checked by validation
          const float* old = reinterpret_cast<const float*>(base);
          for (int64_t j = 0; j < count; ++j) sums[j] += static_cast<double>(old[j]);
        }
        store_row(grad_weight_type, base, count, sums);
      };
      write(a.dweight, sum_gamma);
      write(a.dbias, sum_beta);
    }
  });
}

}  // namespace

int64_t norm_cpu_workspace_bytes(const sy_norm_problem& problem) {
  return 2 *
         sy::align_up(sy::checked_multiply(problem.hidden, 8, "hidden x 8 bytes"), kAlignment);
}

void norm_cpu_forward(const sy_norm_forward_args& a) {
  const sy_norm_problem& p = *a.problem;
  const int64_t n = p.rows;
  const int64_t h = p.hidden;
  const bool residual = has(p, SY_NORM_RESIDUAL);
  const Parameters params = prepare_parameters(p, a.weight, a.bias, a.workspace);
  const DataType x_type = data_type(p.x_dtype);
  const DataType y_type = data_type(p.y_dtype);
  const RowView x(*a.x);
  const RowView y(*a.y);
  const RowView residual_in = residual ? RowView(*a.residual) : RowView();
  const RowView residual_out = residual ? RowView(*a.residual_out) : RowView();
  float* mean_out = p.kind == SY_NORM_LAYER ? sy::data_as<float>(*a.mean) : nullptr;
  float* rstd_out = sy::data_as<float>(*a.rstd);
  const double eps = static_cast<double>(p.eps);

  parallel_for(n, h, [&](int64_t begin, int64_t end, Scratch& scratch) {
    double* row = scratch.doubles(static_cast<std::size_t>(2 * h));
    double* other = row + h;
    for (int64_t i = begin; i < end; ++i) {
      load_row(x_type, x.row(i), h, row);
      if (residual) {
        // h = x + residual rounded to x's dtype: written to residual_out and read back, so the
        // statistics see exactly the h the caller keeps (x or residual may be residual_out).
        load_row(x_type, residual_in.row(i), h, other);
        for (int64_t j = 0; j < h; ++j) row[j] += other[j];
        store_row(x_type, residual_out.row(i), h, row);
        load_row(x_type, residual_out.row(i), h, row);
      }
      const RowStats stats = row_statistics(p.kind, row, h, eps);
      for (int64_t j = 0; j < h; ++j) {
        double value = (row[j] - stats.mean) * stats.rstd;
        if (params.gamma != nullptr) value *= params.gamma[j];
        if (params.beta != nullptr) value += params.beta[j];
        row[j] = value;
      }
      store_row(y_type, y.row(i), h, row);
      if (mean_out != nullptr) mean_out[i] = static_cast<float>(stats.mean);
      rstd_out[i] = static_cast<float>(stats.rstd);
    }
  });
}

void norm_cpu_backward(const sy_norm_backward_args& a) {
  const sy_norm_problem& p = *a.problem;
  const int64_t n = p.rows;
  const int64_t h = p.hidden;
  const Parameters params = prepare_parameters(p, a.weight, a.bias, a.workspace);
  require_invertible_gamma(p, params);

  // Weight gradients first: dx may be written over dy or x_or_y.
  weight_gradients(a, params);

  const bool memory_efficient = has(p, SY_NORM_MEMORY_EFFICIENT);
  const DataType dy_type = data_type(p.y_dtype);
  const DataType src_type = data_type(memory_efficient ? p.y_dtype : p.x_dtype);
  const DataType x_type = data_type(p.x_dtype);
  const RowView dy(*a.dy);
  const RowView src(*a.x_or_y);
  const RowView dx(*a.dx);
  const RowView d_residual = a.d_residual_out != nullptr ? RowView(*a.d_residual_out) : RowView();
  const float* mean = p.kind == SY_NORM_LAYER && !memory_efficient ? sy::data_as<const float>(*a.mean)
                                                                   : nullptr;
  const float* rstd = sy::data_as<const float>(*a.rstd);
  const double count = static_cast<double>(h);

  parallel_for(n, h, [&](int64_t begin, int64_t end, Scratch& scratch) {
    double* memory = scratch.doubles(static_cast<std::size_t>(3 * h));
    double* grad = memory;         // dy, then gh = dy * gamma_eff, then dx
    double* xhat = memory + h;
    double* extra = memory + 2 * h;
    for (int64_t i = begin; i < end; ++i) {
      // Every input row is read before dx's row is written (in place is allowed).
      load_row(dy_type, dy.row(i), h, grad);
      load_row(src_type, src.row(i), h, xhat);
      if (a.d_residual_out != nullptr) load_row(x_type, d_residual.row(i), h, extra);
      const double r = rstd[i];
      normalised_input(p, params, mean != nullptr ? mean[i] : 0.0, r, 0, h, xhat);
      if (params.gamma != nullptr)
        for (int64_t j = 0; j < h; ++j) grad[j] *= params.gamma[j];
      double sum_grad = 0.0;
      double sum_grad_xhat = 0.0;
      for (int64_t j = 0; j < h; ++j) {
        sum_grad += grad[j];
        sum_grad_xhat += grad[j] * xhat[j];
      }
      const double mean_grad = p.kind == SY_NORM_LAYER ? sum_grad / count : 0.0;
      const double mean_grad_xhat = sum_grad_xhat / count;
      for (int64_t j = 0; j < h; ++j)
        grad[j] = r * (grad[j] - mean_grad - xhat[j] * mean_grad_xhat);
      if (a.d_residual_out != nullptr)
        for (int64_t j = 0; j < h; ++j) grad[j] += extra[j];
      store_row(x_type, dx.row(i), h, grad);
    }
  });
}

}  // namespace switchyard::native
