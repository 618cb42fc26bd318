#include "cases.hpp"

#include <algorithm>
#include <utility>

namespace switchyard::bench {
namespace {

std::string shape_text(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

CaseSpec ce_case(const std::string& name, int64_t rows, int64_t cols, int32_t tp_size,
                 CePath path) {
  CaseSpec c;
  c.name = name;
  c.family = CaseFamily::CrossEntropy;
  c.rows = rows;
  c.cols = cols;
  c.tp_size = tp_size;
  c.path = path;
  c.summary = std::string("cross entropy fwd+bwd, ") +
              (path == CePath::PerToken ? "per-token grad_loss (forward, then backward)"
                                        : "grad-in-forward (SY_CE_GRAD_IN_FORWARD, grad_scale)") +
              (tp_size == 1 ? ", TP1 " : ", TP" + std::to_string(tp_size) + " per rank ") +
              shape_text(rows, cols);
  return c;
}

CaseSpec norm_case(const std::string& name, int64_t rows, int64_t hidden, sy_norm_kind kind) {
  CaseSpec c;
  c.name = name;
  c.family = CaseFamily::Norm;
  c.rows = rows;
  c.cols = hidden;
  c.norm_kind = kind;
  c.summary = std::string(kind == SY_NORM_LAYER ? "LayerNorm" : "RMSNorm") + " fwd+bwd " +
              shape_text(rows, hidden);
  return c;
}

}  // namespace

std::vector<CaseSpec> all_cases(bool small, const std::vector<int64_t>& norm_hidden) {
  // PERFORMANCE.md's shapes; --small keeps every name with shapes a CPU runs in milliseconds.
  const int64_t ce_rows = small ? 16 : 2048;
  const int64_t vocab_tp1 = small ? 1024 : 131072;
  const int64_t vocab_tp2 = vocab_tp1 / 2;
  const int64_t norm_rows = small ? 64 : 16384;
  const int64_t hidden_a = small ? 256 : 4096;
  const int64_t hidden_b = small ? 512 : 8192;
  std::vector<CaseSpec> cases{
      ce_case("ce_tp1_per_token", ce_rows, vocab_tp1, 1, CePath::PerToken),
      ce_case("ce_tp1_grad_in_forward", ce_rows, vocab_tp1, 1, CePath::GradInForward),
      ce_case("ce_tp2_per_token", ce_rows, vocab_tp2, 2, CePath::PerToken),
      ce_case("ce_tp2_grad_in_forward", ce_rows, vocab_tp2, 2, CePath::GradInForward),
      norm_case("rmsnorm_4096", norm_rows, hidden_a, SY_NORM_RMS),
      norm_case("rmsnorm_8192", norm_rows, hidden_b, SY_NORM_RMS),
      norm_case("layernorm_4096", norm_rows, hidden_a, SY_NORM_LAYER),
      norm_case("layernorm_8192", norm_rows, hidden_b, SY_NORM_LAYER),
  };
  for (const int64_t hidden : norm_hidden)
    for (const auto& [prefix, kind] : {std::pair<const char*, sy_norm_kind>{"rmsnorm_", SY_NORM_RMS},
                                       {"layernorm_", SY_NORM_LAYER}}) {
      const std::string name = prefix + std::to_string(hidden);
      const bool known = std::any_of(cases.begin(), cases.end(),
                                     [&](const CaseSpec& c) { return c.name == name; });
      if (!known) cases.push_back(norm_case(name, norm_rows, hidden, kind));
    }
  return cases;
}

const char* family_key(CaseFamily family) {
  return family == CaseFamily::CrossEntropy ? "ce" : "norm";
}

const char* path_key(const CaseSpec& spec) {
  if (spec.family == CaseFamily::Norm) return "fwd_bwd";
  return spec.path == CePath::PerToken ? "per_token" : "grad_in_forward";
}

Floor primary_floor(const CaseSpec& spec, int64_t element_bytes) {
  const int64_t tensor = spec.rows * spec.cols * element_bytes;
  if (spec.family == CaseFamily::Norm) return {"5x tensor", 5 * tensor};
  if (spec.path == CePath::PerToken) return {"3-pass", 3 * tensor};
  return {"2-pass", 2 * tensor};
}

Floor two_pass_floor(const CaseSpec& spec, int64_t element_bytes) {
  return {"2-pass", 2 * spec.rows * spec.cols * element_bytes};
}

}  // namespace switchyard::bench
