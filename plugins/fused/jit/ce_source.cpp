#include "ce_source.hpp"

#include "source_prelude.hpp"

#include <algorithm>

namespace switchyard::fused::jit {
namespace {

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

int64_t power_of_two_at_least(int64_t value) {
  int64_t p = 1;
  while (p < value) p *= 2;
  return p;
}

// The kernels. Constants (kVp, kThreads, ...) are emitted before this text by ce_source().
constexpr const char* kCeKernels = R"SY(
typedef SyStorage<kLogitsType>::type sy_logit_t;
typedef SyStorage<kGradType>::type sy_grad_t;

// ---- the (max, lowest column) key ----
// Order-preserving map of a float onto 32 bits; NaN becomes the largest value (NaN counts as
// the maximum, as in torch.argmax) and -0 compares equal to +0.
SY_DEVICE sy_u32 sy_ordered(float v) {
  sy_u32 u = sy_float_to_bits(v);
  if (v != v) u = 0x7fffffffu;
  if (v == 0.0f) u = 0u;
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}
SY_DEVICE float sy_unordered(sy_u32 o) {
  return sy_bits_to_float((o & 0x80000000u) != 0u ? (o & 0x7fffffffu) : ~o);
}
// A larger key is a larger value, or the same value at a lower column. 0 means "no element".
SY_DEVICE sy_u64 sy_key(float v, sy_u32 column) {
  return ((sy_u64)sy_ordered(v) << 32) | (sy_u64)(0xffffffffu - column);
}
SY_DEVICE float sy_key_value(sy_u64 key) { return sy_unordered((sy_u32)(key >> 32)); }
SY_DEVICE sy_i64 sy_key_column(sy_u64 key) {
  return (sy_i64)(0xffffffffu - (sy_u32)(key & 0xffffffffull));
}

// ---- rows and labels ----
SY_DEVICE sy_i64 sy_label(const SyCeArgs& a, sy_i64 row) {
  if constexpr (kLabels64) return static_cast<const sy_i64*>(a.labels)[row];
  else return (sy_i64) static_cast<const int*>(a.labels)[row];
}
SY_DEVICE bool sy_ignored(const SyCeArgs& a, sy_i64 label) {
  return (a.flags & 1) != 0 && label == a.ignore_index;
}
SY_DEVICE const sy_logit_t* sy_logits_row(const SyCeArgs& a, sy_i64 row) {
  return reinterpret_cast<const sy_logit_t*>(static_cast<const char*>(a.logits) + row * a.logits_stride);
}
// Columns of group `it` of this thread in `chunk`: [column, column + kVec).
SY_DEVICE sy_i64 sy_group_column(int chunk, int it) {
  return (sy_i64)chunk * kChunk + ((sy_i64)it * kThreads + SY_THREAD_X) * kVec;
}
SY_DEVICE int sy_valid(sy_i64 column) { return (int)sy_min<sy_i64>(kVp - column, kVec); }

// ---- SY_CE_CHECK_LABELS: N - (lowest row with a label outside [0, V)), 0 when none ----
SY_KERNEL(kRowThreads) sy_ce_check_labels(const SyCeArgs a) {
  const sy_i64 row = SY_BLOCK_X * kRowThreads + SY_THREAD_X;
  if (row >= a.rows) return;
  const sy_i64 label = sy_label(a, row);
  if (!sy_ignored(a, label) && (label < 0 || label >= a.vocab_size))
    sy_atomic_max(a.ws_bad, (sy_u64)(a.rows - row));
}

// ---- row max (and with kArgmax its lowest column) of this rank's columns ----
SY_KERNEL(kThreads) sy_ce_max(const SyCeArgs a) {
  const sy_i64 row = SY_BLOCK_X;
  const int chunk = SY_BLOCK_Y;
  const sy_logit_t* z = sy_logits_row(a, row);
  const bool vector = sy_aligned<kLogitsType, kVec>(z);
  float best = sy_neg_inf();
  sy_u32 best_column = 0xffffffffu;  // none yet
  SY_UNROLL
  for (int it = 0; it < kIters; ++it) {
    const sy_i64 column = sy_group_column(chunk, it);
    if (column < kVp) {
      float v[kVec];
      sy_load<kLogitsType, kVec>(z + column, v, vector, sy_valid(column));
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) {
        if (column + e < kVp) {
          if constexpr (kArgmax) {
            // Strictly greater: the first (lowest) column of a tie stays; a NaN wins and stays.
            if (best_column == 0xffffffffu || v[e] > best || (v[e] != v[e] && best == best)) {
              best = v[e];
              best_column = (sy_u32)(column + e);
            }
          } else {
            if (best == best && !(v[e] <= best)) best = v[e];  // NaN propagates
          }
        }
      }
    }
  }
  sy_u64 key;
  if constexpr (kArgmax) key = best_column == 0xffffffffu ? 0ull : sy_key(best, best_column);
  else key = sy_key(best, 0u);
  key = sy_block_max<kThreads>(key);
  if (SY_THREAD_X != 0) return;
  if constexpr (kChunks == 1) {
    a.ws_keys[row] = key;
    a.ws_gmax[row] = sy_key_value(key);
  } else {
    a.ws_pkeys[row * kChunks + chunk] = key;
    sy_fence();
    if (sy_atomic_inc(&a.ws_count[row]) == (sy_u32)(kChunks - 1)) {  // the row's last block
      sy_fence();
      sy_u64 row_key = 0;
      for (int c = 0; c < kChunks; ++c) row_key = sy_max(row_key, sy_load_cg(&a.ws_pkeys[row * kChunks + c]));
      a.ws_keys[row] = row_key;
      a.ws_gmax[row] = sy_key_value(row_key);
    }
  }
}

// The row's entries of the SUM all-reduce buffer, and its argmax candidate.
SY_DEVICE void sy_ce_row_sums(const SyCeArgs& a, sy_i64 row, const sy_logit_t* z, float gmax,
                              float sum_exp, float sum_shifted) {
  const sy_i64 local = sy_label(a, row) - a.vocab_start;
  // z_t - max on the owning rank; 0 elsewhere, and on every rank when no rank owns the
  // label (Megatron's rule: z_t := max).
  float target = 0.0f;
  if (local >= 0 && local < kVp) target = sy_to_f32<kLogitsType>(z[local]) - gmax;
  a.ws_red[row] = target;
  a.ws_red[a.rows + row] = sum_exp;
  if constexpr (kSmoothing) a.ws_red[2 * a.rows + row] = sum_shifted;
  if constexpr (kArgmax) {
    if ((a.flags & 2) != 0) {  // tensor parallel: lowest global id attaining the global max
      const sy_u64 key = a.ws_keys[row];
      const float local_max = sy_key_value(key);
      const bool attains = local_max == gmax || (local_max != local_max && gmax != gmax);
      a.ws_cand[row] = attains ? a.vocab_start + sy_key_column(key) : (sy_i64)0x7fffffffffffffffll;
    }
  }
}

// ---- sum exp(z - max), sum (z - max), target logit ----
SY_KERNEL(kThreads) sy_ce_sum(const SyCeArgs a) {
  const sy_i64 row = SY_BLOCK_X;
  const int chunk = SY_BLOCK_Y;
  const sy_logit_t* z = sy_logits_row(a, row);
  const bool vector = sy_aligned<kLogitsType, kVec>(z);
  const float gmax = a.ws_gmax[row];
  float sum_exp = 0.0f;
  float sum_shifted = 0.0f;
  SY_UNROLL
  for (int it = 0; it < kIters; ++it) {
    const sy_i64 column = sy_group_column(chunk, it);
    if (column < kVp) {
      float v[kVec];
      sy_load<kLogitsType, kVec>(z + column, v, vector, sy_valid(column));
      SY_UNROLL
      for (int e = 0; e < kVec; ++e) {
        if (column + e < kVp) {
          const float shifted = v[e] - gmax;
          sum_exp += sy_expf(shifted);
          if constexpr (kSmoothing) sum_shifted += shifted;
        }
      }
    }
  }
  sum_exp = sy_block_sum<kThreads>(sum_exp);
  if constexpr (kSmoothing) sum_shifted = sy_block_sum<kThreads>(sum_shifted);
  if (SY_THREAD_X != 0) return;
  if constexpr (kChunks == 1) {
    sy_ce_row_sums(a, row, z, gmax, sum_exp, sum_shifted);
  } else {
    float* partial = a.ws_psum + (row * kChunks + chunk) * 2;
    partial[0] = sum_exp;
    partial[1] = sum_shifted;
    sy_fence();
    if (sy_atomic_inc(&a.ws_count[a.rows + row]) == (sy_u32)(kChunks - 1)) {  // last block
      sy_fence();
      float row_exp = 0.0f, row_shifted = 0.0f;
      for (int c = 0; c < kChunks; ++c) {  // chunk order: the same bits whoever finishes last
        row_exp += sy_load_cg(a.ws_psum + (row * kChunks + c) * 2);
        row_shifted += sy_load_cg(a.ws_psum + (row * kChunks + c) * 2 + 1);
      }
      sy_ce_row_sums(a, row, z, gmax, row_exp, row_shifted);
    }
  }
}

// ---- lse, loss, argmax (after the SUM all-reduce) ----
SY_KERNEL(kRowThreads) sy_ce_loss(const SyCeArgs a) {
  const sy_i64 row = SY_BLOCK_X * kRowThreads + SY_THREAD_X;
  if (row >= a.rows) return;
  const float gmax = a.ws_gmax[row];
  const double log_sum = sy_log((double)a.ws_red[a.rows + row]);
  double loss = log_sum - (double)a.ws_red[row];  // lse - z_t
  if constexpr (kSmoothing) {
    const double mean_shifted = (double)a.ws_red[2 * a.rows + row] / (double)a.vocab_size;
    loss = (1.0 - a.smoothing) * loss + a.smoothing * (log_sum - mean_shifted);
  }
  if (sy_ignored(a, sy_label(a, row))) loss = 0.0;
  a.lse[row] = (float)((double)gmax + log_sum);
  a.loss[row] = (float)loss;
  if constexpr (kArgmax)
    a.argmax[row] = (a.flags & 2) != 0 ? a.ws_cand[row] : sy_key_column(a.ws_keys[row]);
}

// ---- grad = g * (exp(z - lse) - q), rounded once; may write over the logits ----
SY_KERNEL(kThreads) sy_ce_grad(const SyCeArgs a) {
  const sy_i64 row = SY_BLOCK_X;
  const int chunk = SY_BLOCK_Y;
  const sy_logit_t* z = sy_logits_row(a, row);
  sy_grad_t* out = reinterpret_cast<sy_grad_t*>(static_cast<char*>(a.grad) + row * a.grad_stride);
  const bool vector_in = sy_aligned<kLogitsType, kVec>(z);
  const bool vector_out = sy_aligned<kGradType, kVec>(out);
  const sy_i64 label = sy_label(a, row);
  const bool ignored = sy_ignored(a, label);
  const sy_i64 target = label - a.vocab_start;  // the label's local column, if this rank owns it
  const float lse = a.lse_in[row];
  const float g = a.grad_scale[row];
  const float q_other = (float)a.q_other;
  const float q_target = (float)a.q_target;
  SY_UNROLL
  for (int it = 0; it < kIters; ++it) {
    const sy_i64 column = sy_group_column(chunk, it);
    if (column < kVp) {
      const int valid = sy_valid(column);
      float v[kVec];
      if (ignored) {
        SY_UNROLL
        for (int e = 0; e < kVec; ++e) v[e] = 0.0f;
      } else {
        sy_load<kLogitsType, kVec>(z + column, v, vector_in, valid);
        SY_UNROLL
        for (int e = 0; e < kVec; ++e) {
          const float q = column + e == target ? q_target : q_other;
          v[e] = g * (sy_expf(v[e] - lse) - q);
        }
      }
      sy_store<kGradType, kVec>(out + column, v, vector_out, valid);
    }
  }
}
)SY";

std::string flag(bool value) { return value ? "true" : "false"; }

}  // namespace

std::string CeSpecialization::description() const {
  std::string d = std::string("cross_entropy logits=") + dtype_short_name(logits) +
                  " grad=" + dtype_short_name(grad) + " labels=" + (labels64 ? "int64" : "int32") +
                  " Vp=" + std::to_string(vocab_local);
  if (smoothing) d += " smoothing";
  if (argmax) d += " argmax";
  return d;
}

CeLayout CeLayout::of(const CeSpecialization& spec) {
  CeLayout layout;
  layout.vec = 16 / bytes_of(spec.logits);
  const int64_t groups = (spec.vocab_local + layout.vec - 1) / layout.vec;
  layout.threads = static_cast<int>(std::clamp<int64_t>(power_of_two_at_least(groups), 32, 512));
  const int64_t span = int64_t{layout.threads} * layout.vec;
  if (spec.vocab_local <= kMaxChunk) {
    layout.chunk = round_up(spec.vocab_local, span);
    layout.chunks = 1;
  } else {
    layout.chunk = kMaxChunk;  // a multiple of every span (<= 512 * 8)
    layout.chunks = static_cast<int>((spec.vocab_local + kMaxChunk - 1) / kMaxChunk);
  }
  layout.iters = static_cast<int>(layout.chunk / span);
  return layout;
}

const std::vector<std::string>& ce_kernel_names() {
  static const std::vector<std::string> names = {"sy_ce_check_labels", "sy_ce_max", "sy_ce_sum",
                                                 "sy_ce_loss", "sy_ce_grad"};
  return names;
}

std::string ce_source(const CeSpecialization& spec) {
  const CeLayout layout = CeLayout::of(spec);
  std::string out = "// switchyard fused JIT: " + spec.description() + "\n";
  out += source_prelude();
  out += "\n// ---- specialisation ----\n";
  out += "constexpr int kLogitsType = " + std::to_string(static_cast<int>(spec.logits)) + ";\n";
  out += "constexpr int kGradType = " + std::to_string(static_cast<int>(spec.grad)) + ";\n";
  out += "constexpr bool kLabels64 = " + flag(spec.labels64) + ";\n";
  out += "constexpr sy_i64 kVp = " + std::to_string(spec.vocab_local) + ";\n";
  out += "constexpr int kThreads = " + std::to_string(layout.threads) + ";\n";
  out += "constexpr int kVec = " + std::to_string(layout.vec) + ";\n";
  out += "constexpr sy_i64 kChunk = " + std::to_string(layout.chunk) + ";\n";
  out += "constexpr int kChunks = " + std::to_string(layout.chunks) + ";\n";
  out += "constexpr int kIters = " + std::to_string(layout.iters) + ";\n";
  out += "constexpr bool kSmoothing = " + flag(spec.smoothing) + ";\n";
  out += "constexpr bool kArgmax = " + flag(spec.argmax) + ";\n";
  out += "constexpr int kRowThreads = " + std::to_string(kCeRowThreads) + ";\n";
  out += kCeKernels;
  return out;
}

}  // namespace switchyard::fused::jit
