// Megatron's eager vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py)
// on the CPU, op by op:
//   A. upcast the logits to fp32 (into the workspace), row max, lowest index of the max
//   1. all_reduce(MAX) of the row maxima                                  [tp_size > 1]
//   1'. all_reduce(MIN) of the lowest global index attaining the max      [SY_CE_ARGMAX]
//   B. subtract the max, gather the target logit (0 where not owned), sum of the shifted
//      logits (smoothing), exp, row sum of the exponentials
//   2. all_reduce(SUM) of [target logit | sum of shifted logits]          [tp_size > 1]
//   3. all_reduce(SUM) of the sums of exponentials                        [tp_size > 1]
//   C. log, loss, lse (and the gradient with SY_CE_GRAD_IN_FORWARD)
// Every row is computed by one thread, start to end, in column order; the collectives run on
// the calling thread between the parallel phases. Nothing the caller reads is written before
// the last collective has succeeded.
#include "ce_cpu.hpp"

#include "ce_semantics.hpp"
#include "row_io.hpp"
#include "thread_pool.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace switchyard::native {
namespace {

constexpr int64_t kAlignment = 64;
constexpr int64_t kNoCandidate = std::numeric_limits<int64_t>::max();

// The workspace, carved in a fixed order. Sizes are in elements.
struct CeWorkspace {
  float* logits32 = nullptr;        // [N, Vp] fp32 copy, then z - max, then exp(z - max)
  float* local_max = nullptr;       // [N]
  float* global_max = nullptr;      // [N]
  float* target_and_sum = nullptr;  // [2N]: target logit | sum of shifted logits
  float* sum_exp = nullptr;         // [N]
  int64_t* argmax = nullptr;        // [N]: local, then global index of the max

  struct Segments {
    int64_t logits32, local_max, global_max, target_and_sum, sum_exp, argmax, total;
  };
  static Segments layout(const sy_ce_problem& p) {
    const int64_t n = p.rows;
    Segments s{};
    int64_t at = 0;
    auto place = [&](int64_t bytes) {
      const int64_t offset = at;
      at = sy::align_up(at + bytes, kAlignment);
      return offset;
    };
    s.logits32 = place(sy::checked_multiply(
        sy::checked_multiply(n, p.vocab_local, "rows x vocab_local"), 4, "the fp32 logits copy"));
    s.local_max = place(n * 4);
    s.global_max = place(n * 4);
    s.target_and_sum = place(n * 8);
    s.sum_exp = place(n * 4);
    s.argmax = place(n * 8);
    s.total = std::max<int64_t>(at, kAlignment);
    return s;
  }

  CeWorkspace(void* memory, const sy_ce_problem& p) {
    char* base = static_cast<char*>(memory);
    const Segments s = layout(p);
    logits32 = reinterpret_cast<float*>(base + s.logits32);
    local_max = reinterpret_cast<float*>(base + s.local_max);
    global_max = reinterpret_cast<float*>(base + s.global_max);
    target_and_sum = reinterpret_cast<float*>(base + s.target_and_sum);
    sum_exp = reinterpret_cast<float*>(base + s.sum_exp);
    argmax = reinterpret_cast<int64_t*>(base + s.argmax);
  }
};

bool same_value(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

void all_reduce(const sy_comm& tp, void* buffer, int64_t count, DLDataType dtype,
                sy_reduce_op op, void* stream, const char* what) {
  sy_error error{};
  error.struct_size = sizeof error;
  const sy_status status = tp.all_reduce(tp.ctx, buffer, buffer, count, dtype, op, stream, &error);
  if (status != SY_OK)
    sy::fail(status, std::string("tp->all_reduce of ") + what + " (" + std::to_string(count) +
                         " x " + sy::dtype_name(dtype) + ", rank " + std::to_string(tp.rank) +
                         " of " + std::to_string(tp.size) + ") failed: " +
                         (error.message[0] != '\0' ? error.message : "no message"));
}

void check_labels(const sy_ce_problem& p, const DLTensor& labels) {
  const void* base = sy::data_as<const void>(labels);
  for (int64_t i = 0; i < p.rows; ++i) {
    const int64_t t = load_label(p.label_dtype, base, i);
    if (is_ignored(p, t) || (t >= 0 && t < p.vocab_size)) continue;
    sy::fail(SY_ERR_INVALID_ARGUMENT, bad_label_message(p, i, t));
  }
}

// Phase A for one row: fp32 copy, max, lowest local index attaining it (NaN counts as max).
void upcast_and_max(DataType type, const char* src, int64_t vp, float* row, float* max_out,
                    int64_t* arg_out) {
  load_row(type, src, vp, row);
  float m = row[0];
  int64_t arg = 0;
  for (int64_t j = 1; j < vp; ++j) {
    const float v = row[j];
    if (v > m || (std::isnan(v) && !std::isnan(m))) {
      m = v;
      arg = j;
    }
  }
  *max_out = m;
  *arg_out = arg;
}

// grad = g * (p - q) for one row, from exp(z - max) and the global sum of exponentials.
void gradient_row(const sy_ce_problem& p, double s, int64_t target_column, double g,
                  const float* exp_row, double sum_exp, double* out) {
  const double uniform = s / static_cast<double>(p.vocab_size);
  for (int64_t j = 0; j < p.vocab_local; ++j)
    out[j] = g * (static_cast<double>(exp_row[j]) / sum_exp - uniform);
  if (target_column >= 0) out[target_column] -= g * (1.0 - s);
}

}  // namespace

int64_t ce_cpu_workspace_bytes(const sy_ce_problem& problem) {
  return CeWorkspace::layout(problem).total;
}

int32_t ce_cpu_forward_collectives(const sy_ce_problem& problem) {
  if (problem.tp_size <= 1) return 0;
  return 3 + ((problem.flags & SY_CE_ARGMAX) != 0 ? 1 : 0);
}

void ce_cpu_forward(const sy_ce_forward_args& args) {
  const sy_ce_problem& p = *args.problem;
  const int64_t n = p.rows;
  const int64_t vp = p.vocab_local;
  const bool tensor_parallel = p.tp_size > 1;
  const bool want_argmax = (p.flags & SY_CE_ARGMAX) != 0;
  const bool grad_in_forward = (p.flags & SY_CE_GRAD_IN_FORWARD) != 0;
  const double s = smoothing_weight(p);
  const DataType logits_type = data_type(p.logits_dtype);
  const RowView logits(*args.logits);
  const void* labels = sy::data_as<const void>(*args.labels);
  CeWorkspace ws(args.workspace, p);

  if ((p.flags & SY_CE_CHECK_LABELS) != 0) check_labels(p, *args.labels);

  // A. fp32 upcast, row max and its lowest local index.
  parallel_for(n, vp, [&](int64_t begin, int64_t end, Scratch&) {
    for (int64_t i = begin; i < end; ++i)
      upcast_and_max(logits_type, logits.row(i), vp, ws.logits32 + i * vp, &ws.local_max[i],
                     &ws.argmax[i]);
  });
  for (int64_t i = 0; i < n; ++i) ws.global_max[i] = ws.local_max[i];

  // 1. Global max; 1'. lowest global index attaining it.
  if (tensor_parallel) {
    all_reduce(*args.tp, ws.global_max, n, sy::kF32, SY_REDUCE_MAX, args.stream, "the row maxima");
    if (want_argmax) {
      for (int64_t i = 0; i < n; ++i)
        ws.argmax[i] = same_value(ws.local_max[i], ws.global_max[i])
                           ? p.vocab_start + ws.argmax[i]
                           : kNoCandidate;
      all_reduce(*args.tp, ws.argmax, n, sy::kI64, SY_REDUCE_MIN, args.stream,
                 "the argmax candidates");
    }
  }

  // B. Subtract the max, gather the target, (sum the shifted logits), exp, sum.
  float* target_logit = ws.target_and_sum;
  float* sum_shifted = ws.target_and_sum + n;
  parallel_for(n, vp, [&](int64_t begin, int64_t end, Scratch&) {
    for (int64_t i = begin; i < end; ++i) {
      float* row = ws.logits32 + i * vp;
      const float m = ws.global_max[i];
      for (int64_t j = 0; j < vp; ++j) row[j] -= m;
      const int64_t t = load_label(p.label_dtype, labels, i);
      const int64_t column = is_ignored(p, t) ? -1 : local_column(p, t);
      target_logit[i] = column >= 0 ? row[column] : 0.0f;
      if (s != 0.0) {
        double sum = 0.0;
        for (int64_t j = 0; j < vp; ++j) sum += row[j];
        sum_shifted[i] = static_cast<float>(sum);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < vp; ++j) {
        row[j] = std::exp(row[j]);
        sum += row[j];
      }
      ws.sum_exp[i] = static_cast<float>(sum);
    }
  });

  // 2. and 3.
  if (tensor_parallel) {
    all_reduce(*args.tp, ws.target_and_sum, s != 0.0 ? 2 * n : n, sy::kF32, SY_REDUCE_SUM,
               args.stream, s != 0.0 ? "the target logits and sums of logits" : "the target logits");
    all_reduce(*args.tp, ws.sum_exp, n, sy::kF32, SY_REDUCE_SUM, args.stream,
               "the sums of exponentials");
  }

  // C. log, loss, lse, argmax, gradient.
  float* loss = sy::data_as<float>(*args.loss);
  float* lse = sy::data_as<float>(*args.lse);
  int64_t* argmax = want_argmax ? sy::data_as<int64_t>(*args.argmax) : nullptr;
  const float* grad_scale = grad_in_forward ? sy::data_as<const float>(*args.grad_scale) : nullptr;
  const DataType grad_type = data_type(p.grad_dtype);
  const RowView grad(grad_in_forward ? *args.grad_logits : *args.logits);
  const double vocab = static_cast<double>(p.vocab_size);
  parallel_for(n, grad_in_forward ? vp : 1, [&](int64_t begin, int64_t end, Scratch& scratch) {
    for (int64_t i = begin; i < end; ++i) {
      const double sum_exp = ws.sum_exp[i];
      const double log_sum = std::log(sum_exp);
      lse[i] = static_cast<float>(static_cast<double>(ws.global_max[i]) + log_sum);
      const int64_t t = load_label(p.label_dtype, labels, i);
      const bool ignored = is_ignored(p, t);
      if (ignored) {
        loss[i] = 0.0f;
      } else {
        const double ce = log_sum - static_cast<double>(target_logit[i]);
        const double smooth = s != 0.0 ? log_sum - static_cast<double>(sum_shifted[i]) / vocab : 0.0;
        loss[i] = static_cast<float>((1.0 - s) * ce + s * smooth);
      }
      if (argmax != nullptr) argmax[i] = ws.argmax[i];
      if (!grad_in_forward) continue;
      double* out = scratch.doubles(static_cast<std::size_t>(vp));
      const double g = ignored ? 0.0 : static_cast<double>(grad_scale[i]);
      if (ignored) {
        for (int64_t j = 0; j < vp; ++j) out[j] = 0.0;
      } else {
        gradient_row(p, s, local_column(p, t), g, ws.logits32 + i * vp, sum_exp, out);
      }
      store_row(grad_type, grad.row(i), vp, out);
    }
  });
}

void ce_cpu_backward(const sy_ce_backward_args& args) {
  const sy_ce_problem& p = *args.problem;
  const int64_t n = p.rows;
  const int64_t vp = p.vocab_local;
  const double s = smoothing_weight(p);
  const double uniform = s / static_cast<double>(p.vocab_size);
  const DataType logits_type = data_type(p.logits_dtype);
  const DataType grad_type = data_type(p.grad_dtype);
  const RowView logits(*args.logits);
  const RowView grad(*args.grad_logits);
  const void* labels = sy::data_as<const void>(*args.labels);
  const float* lse = sy::data_as<const float>(*args.lse);
  const float* grad_loss = sy::data_as<const float>(*args.grad_loss);

  parallel_for(n, vp, [&](int64_t begin, int64_t end, Scratch& scratch) {
    double* row = scratch.doubles(static_cast<std::size_t>(vp));
    for (int64_t i = begin; i < end; ++i) {
      const int64_t t = load_label(p.label_dtype, labels, i);
      if (is_ignored(p, t)) {
        for (int64_t j = 0; j < vp; ++j) row[j] = 0.0;
      } else {
        // The whole row is read before any of it is written: grad_logits may alias logits.
        load_row(logits_type, logits.row(i), vp, row);
        const double g = grad_loss[i];
        const double log_sum = lse[i];
        for (int64_t j = 0; j < vp; ++j) row[j] = g * (std::exp(row[j] - log_sum) - uniform);
        const int64_t column = local_column(p, t);
        if (column >= 0) row[column] -= g * (1.0 - s);
      }
      store_row(grad_type, grad.row(i), vp, row);
    }
  });
}

}  // namespace switchyard::native
