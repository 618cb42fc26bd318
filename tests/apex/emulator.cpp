#include "emulator.hpp"

#include "plan.hpp"
#include "row_math.hpp"

#include <array>
#include <atomic>
#include <cstring>
#include <stdexcept>

namespace apex_test {
namespace {

using namespace switchyard::apex;

std::atomic<int64_t> g_disagreements{0};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(const WelfordStats& a, const WelfordStats& b) {
  return same_bits(a.count, b.count) && same_bits(a.mean, b.mean) && same_bits(a.m2, b.m2);
}

// ---- forward --------------------------------------------------------------------------------

RowStatistics write_statistics(const ForwardParams& p, int64_t row, const WelfordStats& welford,
                               float sum_squares) {
  const RowStatistics stats = row_statistics(p.kind, welford, sum_squares, p.hidden, p.eps);
  if (p.kind == NormKind::Layer) p.mean[row] = stats.mean;
  p.rstd[row] = stats.rstd;
  return stats;
}

template <class T, int THREADS, int CPT>
void run_forward_fast(const ForwardParams& p) {
  std::vector<ForwardFastThread<T, CPT>> threads(THREADS);
  for (int64_t row = 0; row < p.rows; ++row) {
    for (int t = 0; t < THREADS; ++t) threads[t].load(p, row, t, THREADS);
    WelfordStats welford = welford_empty();
    float sum_squares = 0.0f;
    if (p.kind == NormKind::Layer) {
      std::vector<WelfordStats> parts(THREADS);
      for (int t = 0; t < THREADS; ++t) parts[t] = threads[t].welford();
      welford = reduce_welford(parts);
    } else {
      std::vector<std::pair<float, float>> parts(THREADS);
      for (int t = 0; t < THREADS; ++t) parts[t] = {threads[t].sum_squares(), 0.0f};
      sum_squares = reduce_sums(parts).first;
    }
    const RowStatistics stats = write_statistics(p, row, welford, sum_squares);
    for (int t = 0; t < THREADS; ++t) threads[t].store(p, row, t, THREADS, stats.mean, stats.rstd);
  }
}

template <class T, int I = 0>
void forward_fast(const ForwardParams& p) {
  if constexpr (I < kFastShapeCount) {
    constexpr FastShape s = kFastShapes[I];
    if (s.hidden != p.hidden) return forward_fast<T, I + 1>(p);
    run_forward_fast<T, s.threads, s.chunks_per_thread>(p);
  } else {
    throw std::logic_error("forward_path chose Fast for a hidden size without a fast shape");
  }
}

template <class Tx, class Ty>
void forward_general(const ForwardParams& p) {
  using Thread = ForwardGeneralThread<Tx, Ty>;
  const int threads = general_threads(p.hidden);
  for (int64_t row = 0; row < p.rows; ++row) {
    WelfordStats welford = welford_empty();
    float sum_squares = 0.0f;
    if (p.kind == NormKind::Layer) {
      std::vector<WelfordStats> parts(threads);
      for (int t = 0; t < threads; ++t) parts[t] = Thread::welford(p, row, t, threads);
      welford = reduce_welford(parts);
    } else {
      std::vector<std::pair<float, float>> parts(threads);
      for (int t = 0; t < threads; ++t) parts[t] = {Thread::sum_squares(p, row, t, threads), 0.0f};
      sum_squares = reduce_sums(parts).first;
    }
    const RowStatistics stats = write_statistics(p, row, welford, sum_squares);
    for (int t = 0; t < threads; ++t) Thread::store(p, row, t, threads, stats.mean, stats.rstd);
  }
}

template <class Tx>
void forward_for(const ForwardParams& p) {
  if (p.rows == 0) return;
  if (forward_path(p.hidden, p.x_dtype, p.y_dtype) == ForwardPath::Fast) return forward_fast<Tx>(p);
  if (p.y_dtype == p.x_dtype) return forward_general<Tx, Tx>(p);
  forward_general<Tx, float>(p);
}

// ---- backward -------------------------------------------------------------------------------

template <class T, int THREADS, int CPT, bool LAYER>
void run_backward_fused(const BackwardParams& p) {
  std::vector<BackwardFusedThread<T, CPT, LAYER>> threads(THREADS);
  for (int64_t chunk = 0; chunk < p.chunks; ++chunk) {
    for (auto& thread : threads) thread.clear();
    const int64_t begin = chunk * p.rows_per_chunk;
    const int64_t end = min64(p.rows, begin + p.rows_per_chunk);
    for (int64_t row = begin; row < end; ++row) {
      const float mean = backward_mean(p, row);
      const float rstd = p.rstd[row];
      std::vector<std::pair<float, float>> parts(THREADS);
      for (int t = 0; t < THREADS; ++t) {
        threads[t].load(p, row, t, THREADS);
        threads[t].accumulate(p, t, THREADS, mean, rstd, parts[t].first, parts[t].second);
      }
      const std::pair<float, float> sums = reduce_sums(parts);
      const DxCoefficients k = dx_coefficients(p.kind, sums.first, sums.second, p.hidden);
      for (int t = 0; t < THREADS; ++t)
        threads[t].store_dx(p, row, t, THREADS, mean, rstd, k.centre, k.slope);
    }
    for (int t = 0; t < THREADS; ++t) threads[t].write_partials(p, chunk, t, THREADS);
  }
}

template <class T, int I = 0>
void backward_fused(const BackwardParams& p) {
  if constexpr (I < kFastShapeCount) {
    constexpr FastShape s = kFastShapes[I];
    if constexpr (!s.fused_backward) {
      return backward_fused<T, I + 1>(p);
    } else {
      if (s.hidden != p.hidden) return backward_fused<T, I + 1>(p);
      if (p.kind == NormKind::Layer)
        return run_backward_fused<T, s.threads, s.chunks_per_thread, true>(p);
      return run_backward_fused<T, s.threads, s.chunks_per_thread, false>(p);
    }
  } else {
    throw std::logic_error("backward_path chose Fused for a hidden size without a fused shape");
  }
}

template <class Tx, class Ty, class Tin>
void backward_split(const BackwardParams& p) {
  if (p.partial_gamma != nullptr || p.partial_beta != nullptr)
    for (int64_t chunk = 0; chunk < p.chunks; ++chunk)
      for (int64_t c = 0; c < chunk_count(p.hidden); ++c) column_partial<Ty, Tin>(p, chunk, c);
  using Thread = BackwardGeneralThread<Tx, Ty, Tin>;
  const int threads = general_threads(p.hidden);
  for (int64_t row = 0; row < p.rows; ++row) {
    const float mean = backward_mean(p, row);
    const float rstd = p.rstd[row];
    std::vector<std::pair<float, float>> parts(threads);
    for (int t = 0; t < threads; ++t)
      Thread::sums(p, row, t, threads, mean, rstd, parts[t].first, parts[t].second);
    const std::pair<float, float> sums = reduce_sums(parts);
    const DxCoefficients k = dx_coefficients(p.kind, sums.first, sums.second, p.hidden);
    for (int t = 0; t < threads; ++t)
      Thread::store_dx(p, row, t, threads, mean, rstd, k.centre, k.slope);
  }
}

template <class Tx>
void backward_rows_for(const BackwardParams& p) {
  if (p.rows == 0) return;
  if (backward_path(p.hidden, p.x_dtype, p.y_dtype) == BackwardPath::Fused)
    return backward_fused<Tx>(p);
  if (p.y_dtype == p.x_dtype) return backward_split<Tx, Tx, Tx>(p);
  if (p.memory_efficient) return backward_split<Tx, float, float>(p);
  backward_split<Tx, float, Tx>(p);
}

void final_sums(const BackwardParams& p) {
  const int64_t chunks = p.rows > 0 ? p.chunks : 0;
  const float* partial[2] = {p.partial_gamma, p.partial_beta};
  void* out[2] = {p.dweight, p.dbias};
  for (int which = 0; which < 2; ++which) {
    if (out[which] == nullptr) continue;
    for (int64_t column = 0; column < p.hidden; ++column) {
      float lanes[kFinalLanes];
      for (int w = 0; w < kFinalLanes; ++w)
        lanes[w] = partial[which] != nullptr
                       ? final_lane_sum(partial[which], p.hidden, chunks, column, w)
                       : 0.0f;
      final_store(out[which], p.grad_weight_dtype, p.accumulate, column, lanes);
    }
  }
}

}  // namespace

WelfordStats reduce_welford(const std::vector<WelfordStats>& per_thread) {
  if (per_thread.empty() || per_thread.size() % 32 != 0)
    throw std::invalid_argument("reduce_welford: whole warps only");
  std::vector<WelfordStats> warps;
  for (size_t w = 0; w < per_thread.size() / 32; ++w) {
    std::array<WelfordStats, 32> lanes;
    for (int l = 0; l < 32; ++l) lanes[l] = per_thread[w * 32 + l];
    for (int mask = 1; mask < 32; mask <<= 1) {
      std::array<WelfordStats, 32> next;
      for (int l = 0; l < 32; ++l)
        next[l] = (l & mask) != 0 ? welford_merge(lanes[l ^ mask], lanes[l])
                                  : welford_merge(lanes[l], lanes[l ^ mask]);
      lanes = next;
    }
    for (int l = 1; l < 32; ++l)
      if (!same_bits(lanes[l], lanes[0])) ++g_disagreements;
    warps.push_back(lanes[0]);
  }
  WelfordStats r = warps[0];
  for (size_t w = 1; w < warps.size(); ++w) r = welford_merge(r, warps[w]);
  return r;
}

std::pair<float, float> reduce_sums(const std::vector<std::pair<float, float>>& per_thread) {
  if (per_thread.empty() || per_thread.size() % 32 != 0)
    throw std::invalid_argument("reduce_sums: whole warps only");
  std::vector<std::pair<float, float>> warps;
  for (size_t w = 0; w < per_thread.size() / 32; ++w) {
    std::array<std::pair<float, float>, 32> lanes;
    for (int l = 0; l < 32; ++l) lanes[l] = per_thread[w * 32 + l];
    for (int mask = 1; mask < 32; mask <<= 1) {
      std::array<std::pair<float, float>, 32> next;
      for (int l = 0; l < 32; ++l)  // the device: s += shfl_xor(s, mask)
        next[l] = {lanes[l].first + lanes[l ^ mask].first,
                   lanes[l].second + lanes[l ^ mask].second};
      lanes = next;
    }
    for (int l = 1; l < 32; ++l)
      if (!same_bits(lanes[l].first, lanes[0].first) ||
          !same_bits(lanes[l].second, lanes[0].second))
        ++g_disagreements;
    warps.push_back(lanes[0]);
  }
  std::pair<float, float> r = warps[0];
  for (size_t w = 1; w < warps.size(); ++w) {
    r.first += warps[w].first;
    r.second += warps[w].second;
  }
  return r;
}

int64_t lane_disagreements() { return g_disagreements.load(); }

void emulate_forward(const ForwardParams& p) {
  switch (p.x_dtype) {
    case Dtype::F32: return forward_for<float>(p);
    case Dtype::BF16: return forward_for<__nv_bfloat16>(p);
    default: return forward_for<__half>(p);
  }
}

void emulate_backward(const BackwardParams& p) {
  switch (p.x_dtype) {
    case Dtype::F32: backward_rows_for<float>(p); break;
    case Dtype::BF16: backward_rows_for<__nv_bfloat16>(p); break;
    default: backward_rows_for<__half>(p); break;
  }
  if (p.dweight != nullptr || p.dbias != nullptr) final_sums(p);
}

}  // namespace apex_test
