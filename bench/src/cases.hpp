// The benchmark cases of PERFORMANCE.md and their memory floors.
#ifndef SWITCHYARD_BENCH_CASES_HPP
#define SWITCHYARD_BENCH_CASES_HPP

#include <switchyard/norm.h>

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::bench {

enum class CaseFamily { CrossEntropy, Norm };
enum class CePath {
  PerToken,      // forward (loss, lse), then backward with a per-token grad_loss
  GradInForward  // forward with SY_CE_GRAD_IN_FORWARD and grad_scale; no backward
};

struct CaseSpec {
  std::string name;
  CaseFamily family = CaseFamily::CrossEntropy;
  int64_t rows = 0;
  int64_t cols = 0;     // CE: vocabulary columns of one rank (Vp); norm: hidden size
  int32_t tp_size = 1;  // CE: the global vocabulary is cols * tp_size, split over tp_size ranks
  CePath path = CePath::PerToken;
  sy_norm_kind norm_kind = SY_NORM_RMS;
  std::string summary;
};

// Every case, in run order: PERFORMANCE.md's, then rmsnorm_H and layernorm_H for each of
// `norm_hidden` not already among them. `small` keeps the names and semantics with tiny shapes
// (fewer rows; the extra cases keep their hidden size).
std::vector<CaseSpec> all_cases(bool small, const std::vector<int64_t>& norm_hidden = {});

const char* family_key(CaseFamily family);  // "ce" | "norm"
const char* path_key(const CaseSpec& spec);  // "per_token" | "grad_in_forward" | "fwd_bwd"

// Bytes that must move through device memory, and what that count assumes.
struct Floor {
  std::string name;  // "3-pass", "2-pass", "5x tensor"
  int64_t bytes = 0;
};
// The floor the case is judged against: CE per-token 3-pass (forward reads the logits;
// backward reads them and writes the gradient), CE grad-in-forward 2-pass (read once, write
// once), norms 5 x tensor bytes (forward reads x and writes y; backward reads x and dy and
// writes dx). O(rows) and O(hidden) traffic is left out.
Floor primary_floor(const CaseSpec& spec, int64_t element_bytes);
// CE only: the 2-pass floor, which PERFORMANCE.md's peer table also quotes for the per-token
// path. Equal to the primary floor for grad-in-forward.
Floor two_pass_floor(const CaseSpec& spec, int64_t element_bytes);

}  // namespace switchyard::bench

#endif
