#include <cmath>
#include <stdexcept>
#include <string>
#include <switchyard/conformance/reference_ce.hpp>

namespace switchyard::conformance {
namespace {

void check_sizes(const CeReferenceProblem& problem, const std::vector<double>& logits,
                 const std::vector<int64_t>& labels) {
  if (problem.rows < 0 || problem.vocab < 1)
    throw std::invalid_argument(
        "reference_ce: rows must be >= 0 and vocab >= 1, got rows=" + std::to_string(problem.rows) +
        " vocab=" + std::to_string(problem.vocab));
  if (static_cast<int64_t>(logits.size()) != problem.rows * problem.vocab ||
      static_cast<int64_t>(labels.size()) != problem.rows)
    throw std::invalid_argument(
        "reference_ce: logits must hold rows*vocab values and labels "
        "rows values");
}

bool owned(int64_t label, int64_t vocab) { return label >= 0 && label < vocab; }

double row_lse(const double* z, int64_t vocab) {
  double max = z[0];
  for (int64_t j = 1; j < vocab; ++j) max = std::fmax(max, z[j]);
  double sum = 0;
  for (int64_t j = 0; j < vocab; ++j) sum += std::exp(z[j] - max);
  return max + std::log(sum);
}

// grad_j = g * (exp(z_j - lse) - q_j), q = (1 - s) * onehot(t) [when owned] + s / V.
void row_grad(const CeReferenceProblem& problem, const double* z, int64_t label, double lse,
              double g, double* grad, double* magnitude) {
  const int64_t vocab = problem.vocab;
  if (row_ignored(problem, label)) {
    for (int64_t j = 0; j < vocab; ++j) grad[j] = magnitude[j] = 0;
    return;
  }
  const double s = smoothing_weight(problem);
  for (int64_t j = 0; j < vocab; ++j) {
    double q = s / static_cast<double>(vocab);
    if (owned(label, vocab) && j == label) q += 1 - s;
    const double p = std::exp(z[j] - lse);
    grad[j] = g * (p - q);
    magnitude[j] = std::fabs(g) * (p + q);
  }
}

}  // namespace

double smoothing_weight(const CeReferenceProblem& problem) {
  const double alpha = problem.label_smoothing;
  if (alpha == 0) return 0;
  if (problem.smoothing == SY_SMOOTHING_PYTORCH) return alpha;
  if (problem.vocab == 1) return 0;
  const double v = static_cast<double>(problem.vocab);
  return alpha * v / (v - 1);
}

bool row_ignored(const CeReferenceProblem& problem, int64_t label) {
  return (problem.flags & SY_CE_IGNORE_INDEX) != 0 && label == problem.ignore_index;
}

CeReferenceForward reference_ce_forward(const CeReferenceProblem& problem,
                                        const std::vector<double>& logits,
                                        const std::vector<int64_t>& labels,
                                        const std::vector<double>* grad_scale) {
  check_sizes(problem, logits, labels);
  const int64_t rows = problem.rows;
  const int64_t vocab = problem.vocab;
  const double s = smoothing_weight(problem);

  CeReferenceForward out;
  out.loss.resize(rows);
  out.lse.resize(rows);
  out.argmax.resize(rows);
  if (grad_scale != nullptr) {
    out.grad.resize(rows * vocab);
    out.grad_magnitude.resize(rows * vocab);
  }

  for (int64_t i = 0; i < rows; ++i) {
    const double* z = logits.data() + i * vocab;
    int64_t best = 0;
    double sum = 0;
    for (int64_t j = 0; j < vocab; ++j) {
      if (z[j] > z[best]) best = j;  // strict: the lowest id wins ties
      sum += z[j];
    }
    const double lse = row_lse(z, vocab);
    const int64_t t = labels[i];
    // Without an owner the target logit is the row max (Megatron's masked path).
    const double z_target = owned(t, vocab) ? z[t] : z[best];
    const double mean_z = sum / static_cast<double>(vocab);

    out.lse[i] = lse;
    out.argmax[i] = best;
    out.loss[i] = row_ignored(problem, t) ? 0.0 : (1 - s) * (lse - z_target) + s * (lse - mean_z);
    if (grad_scale != nullptr)
      row_grad(problem, z, t, lse, (*grad_scale)[i], out.grad.data() + i * vocab,
               out.grad_magnitude.data() + i * vocab);
  }
  return out;
}

CeReferenceGradient reference_ce_backward(const CeReferenceProblem& problem,
                                          const std::vector<double>& logits,
                                          const std::vector<int64_t>& labels,
                                          const std::vector<double>& lse,
                                          const std::vector<double>& grad_loss) {
  check_sizes(problem, logits, labels);
  if (static_cast<int64_t>(lse.size()) != problem.rows ||
      static_cast<int64_t>(grad_loss.size()) != problem.rows)
    throw std::invalid_argument("reference_ce_backward: lse and grad_loss must hold rows values");
  CeReferenceGradient out;
  out.grad.resize(problem.rows * problem.vocab);
  out.grad_magnitude.resize(problem.rows * problem.vocab);
  for (int64_t i = 0; i < problem.rows; ++i)
    row_grad(problem, logits.data() + i * problem.vocab, labels[i], lse[i], grad_loss[i],
             out.grad.data() + i * problem.vocab, out.grad_magnitude.data() + i * problem.vocab);
  return out;
}

}  // namespace switchyard::conformance
