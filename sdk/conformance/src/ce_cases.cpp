// The cross-entropy case list for one device and logits dtype.
#include <switchyard/loss.h>

#include <algorithm>

#include "case.hpp"
#include "ce_case.hpp"
#include "random_data.hpp"

namespace switchyard::conformance {
namespace {

constexpr uint32_t kSmoothing = SY_CE_FEATURE_LABEL_SMOOTHING;
constexpr uint32_t kIgnore = SY_CE_FEATURE_IGNORE_INDEX;
constexpr uint32_t kArgmax = SY_CE_FEATURE_ARGMAX;
constexpr uint32_t kGradInForward = SY_CE_FEATURE_GRAD_IN_FORWARD;
constexpr uint32_t kTensorParallel = SY_CE_FEATURE_TENSOR_PARALLEL;

// Partitions that differ from rank to rank (and are not sorted), every rank >= 1 column.
std::vector<int64_t> unequal_split(int64_t vocab, int tp) {
  static const int64_t weights[] = {3, 1, 4, 1, 5, 9, 2, 6};
  int64_t total = 0;
  for (int r = 0; r < tp; ++r) total += weights[r % 8];
  std::vector<int64_t> split;
  int64_t used = 0;
  for (int r = 0; r + 1 < tp; ++r) {
    split.push_back(std::max<int64_t>(1, vocab * weights[r % 8] / total));
    used += split.back();
  }
  split.push_back(vocab - used);
  return split;
}

std::vector<int64_t> equal_split(int64_t vocab, int tp) {
  return std::vector<int64_t>(static_cast<size_t>(tp), vocab / tp);
}

std::string tp_segment(const CeSpec& spec) {
  const size_t tp = spec.split.size();
  if (spec.check == CeCheck::GatheredLogitsRefused) return "tp" + std::to_string(tp);
  if (tp == 1) return "tp1";
  const bool equal = std::all_of(spec.split.begin(), spec.split.end(),
                                 [&](int64_t c) { return c == spec.split[0]; });
  return "tp" + std::to_string(tp) + (equal ? "-equal" : "-unequal");
}

class CeCaseList {
 public:
  CeCaseList(const Runtime& runtime, const FamilyInfo& info, DLDevice device, DLDataType dtype,
             const CaseOptions& options)
      : runtime_(runtime), info_(info), device_(device), dtype_(dtype), options_(options) {
    prefix_ = std::string("ce/") + (device.device_type == kDLCUDA ? "cuda/" : "") +
              short_dtype_name(dtype) + "/";
  }

  CeSpec base(int64_t rows = 7, int64_t vocab = 50, int tp = 1) const {
    CeSpec s;
    s.device = device_;
    s.rows = rows;
    s.vocab = vocab;
    s.split = tp == 1 ? std::vector<int64_t>{vocab} : unequal_split(vocab, tp);
    s.logits_dtype = dtype_;
    s.grad_dtype = dtype_;
    return s;
  }

  // Every request the plugin declares at once (grad in forward apart: it replaces backward).
  CeSpec all_features(CeSpec s) const {
    if (declares(kSmoothing)) s.label_smoothing = 0.1f;
    if (declares(kIgnore)) s.flags |= SY_CE_IGNORE_INDEX;
    if (declares(kArgmax)) s.flags |= SY_CE_ARGMAX;
    return s;
  }
  uint32_t all_feature_bits() const { return info_.features & (kSmoothing | kIgnore | kArgmax); }

  bool declares(uint32_t feature) const { return (info_.features & feature) == feature; }

  // `needs`: capability bits the case relies on. `declared_only`: the problem uses nothing
  // but declared capabilities, so a refusal is a failure. `all_seeds`: once per seed.
  void add(const std::string& variant, CeSpec spec, uint32_t needs, bool declared_only,
           bool all_seeds = false) {
    if (spec.split.size() > 1) needs |= kTensorParallel;
    const std::string key = prefix_ + tp_segment(spec) + "/" + variant;
    const std::vector<uint64_t> seeds =
        all_seeds ? options_.seeds : std::vector<uint64_t>{options_.seeds.front()};
    for (uint64_t seed : seeds) {
      Case c;
      c.name = key + "/seed" + std::to_string(seed);
      const uint32_t missing = needs & ~info_.features;
      if (missing != 0) {
        c.skip_reason = "the plugin does not declare " + ce_feature_names(missing);
      } else if (spec.split.size() > 1 && device_.device_type != kDLCPU) {
        c.skip_reason =
            "tensor-parallel cases run on CPU buffers through the in-process thread "
            "group; CUDA tensor parallelism is covered by the NCCL suite";
      } else {
        CeSpec s = spec;
        s.seed = case_seed(key, seed);
        if (declared_only) {
          s.declared = short_dtype_name(dtype_) + " logits";
          if (needs != 0) s.declared += " and " + ce_feature_names(needs);
        }
        const Runtime* runtime = &runtime_;
        c.run = [runtime, s] { return run_ce_case(*runtime, s); };
      }
      cases_.push_back(std::move(c));
    }
  }

  std::vector<Case> build() {
    const std::vector<int> tp_sizes =
        options_.quick ? std::vector<int>{2, 3} : std::vector<int>{2, 3, 4, 8};
    CeSpec s;

    // ---- seeded: the basics, once per seed ----
    add("basic", base(), 0, true, true);
    s = base();
    s.label_smoothing = 0.1f;
    s.smoothing = SY_SMOOTHING_MEGATRON;
    add("smoothing-megatron", s, kSmoothing, true, true);
    s.smoothing = SY_SMOOTHING_PYTORCH;
    add("smoothing-pytorch", s, kSmoothing, true, true);
    s = base();
    s.flags = SY_CE_IGNORE_INDEX;
    add("ignore-index", s, kIgnore, true, true);
    for (int tp : tp_sizes) add("basic", base(6, 50, tp), 0, true, true);
    add("all-features", all_features(base(6, 50, 3)), all_feature_bits(), true, true);

    // ---- sizes ----
    add("v1", base(5, 1), 0, false);
    add("v3", base(9, 3), 0, false);
    add("v16032", base(4, 16032), 0, false);
    if (!options_.quick) add("v50257", base(3, 50257), 0, false);
    s = base(5, 1);
    s.label_smoothing = 0.1f;
    add("v1/smoothing-megatron", s, kSmoothing, false);
    s = base(9, 3);
    s.label_smoothing = 0.1f;
    s.smoothing = SY_SMOOTHING_PYTORCH;
    add("v3/smoothing-pytorch", s, kSmoothing, false);

    // ---- dtypes and layouts ----
    s = base();
    s.label_dtype = kI32;
    add("labels-i32", s, 0, false);
    s.flags = SY_CE_IGNORE_INDEX;
    add("labels-i32/ignore-index", s, kIgnore, false);
    if (!same_dtype(dtype_, kF32)) {
      s = base();
      s.grad_dtype = kF32;
      add("grad-f32", s, 0, false);
    }
    if (!same_dtype(dtype_, kBF16)) {
      s = base();
      s.grad_dtype = kBF16;
      add("grad-bf16", s, 0, false);
    }
    s = base();
    s.strided = true;
    add("strided", s, 0, true);

    // ---- features ----
    s = base();
    s.flags = SY_CE_IGNORE_INDEX;
    s.ignore_index = 7;  // a real vocabulary id can be the ignored one
    add("ignore-index-in-vocab", s, kIgnore, true);
    s = base();
    s.flags = SY_CE_ARGMAX;
    add("argmax", s, kArgmax, true);
    s.argmax_ties = true;
    add("argmax-ties", s, kArgmax, true);
    s = base();
    s.flags = SY_CE_GRAD_IN_FORWARD;
    add("grad-in-forward", s, kGradInForward, true);
    s.grad_in_forward_aliased = true;
    add("grad-in-forward-aliased", s, kGradInForward, true);
    s = base();
    s.backward_in_place = true;
    add("backward-in-place", s, 0, true);
    s = base();
    s.flags = SY_CE_CHECK_LABELS;
    add("check-labels", s, 0, false);
    s.check = CeCheck::BadLabelRefused;
    add("check-labels-refusal", s, 0, false);
    s = all_features(base());
    if (declares(kGradInForward)) s.flags |= SY_CE_GRAD_IN_FORWARD;
    add("all-features", s, all_feature_bits() | (info_.features & kGradInForward), true);

    // ---- tensor parallel ----
    s = base(6, 50, 2);
    s.label_smoothing = 0.1f;
    add("smoothing-megatron", s, kSmoothing, true);
    s.smoothing = SY_SMOOTHING_PYTORCH;
    add("smoothing-pytorch", s, kSmoothing, true);
    s = base(6, 50, 3);
    s.flags = SY_CE_IGNORE_INDEX;
    add("ignore-index", s, kIgnore, true);
    s = base(6, 50, 3);
    s.flags = SY_CE_ARGMAX;
    s.argmax_ties = true;
    add("argmax-ties", s, kArgmax, true);
    s = base(6, 50, 4);
    s.flags = SY_CE_GRAD_IN_FORWARD;
    add("grad-in-forward", s, kGradInForward, true);
    s = base(6, 50, 2);
    s.flags = SY_CE_GRAD_IN_FORWARD;
    s.grad_in_forward_aliased = true;
    add("grad-in-forward-aliased", s, kGradInForward, true);
    s = base(6, 50, 2);
    s.backward_in_place = true;
    add("backward-in-place", s, 0, true);
    s = base(6, 50, 2);
    s.strided = true;
    add("strided", s, 0, true);
    s = base(6, 50, 2);
    s.flags = SY_CE_CHECK_LABELS;
    s.check = CeCheck::BadLabelRefused;
    add("check-labels-refusal", s, 0, false);
    if (!options_.quick) {
      add("v16032", base(3, 16032, 8), 0, false);
      s = base(2, 16032, 4);
      s.split = equal_split(16032, 4);
      add("v16032", s, 0, false);
      add("v50257", base(2, 50257, 2), 0, false);
      add("all-features", all_features(base(6, 50, 8)), all_feature_bits(), true);
    }
    s = base(4, 50, 2);
    s.check = CeCheck::GatheredLogitsRefused;
    add("gathered-logits-refused", s, 0, false);

    // ---- determinism ----
    const bool deterministic = info_.determinism == SY_DETERMINISTIC;
    auto add_determinism = [&](const std::string& variant, CeSpec spec, uint32_t needs) {
      if (!deterministic) {
        Case c;
        c.name = prefix_ + tp_segment(spec) + "/" + variant + "/seed" +
                 std::to_string(options_.seeds.front());
        c.skip_reason = "the plugin does not declare SY_DETERMINISTIC";
        cases_.push_back(std::move(c));
        return;
      }
      add(variant, spec, needs, true);
    };
    for (CeCheck check : {CeCheck::Replay, CeCheck::BatchInvariance}) {
      const std::string name = check == CeCheck::Replay ? "replay" : "batch-invariance";
      s = all_features(base(9, 50));
      s.check = check;
      add_determinism(name, s, all_feature_bits());
      s.flags |= SY_CE_GRAD_IN_FORWARD;
      add_determinism(name + "/grad-in-forward", s, all_feature_bits() | kGradInForward);
      s = all_features(base(9, 50, 2));
      s.check = check;
      add_determinism(name, s, all_feature_bits());
    }
    return std::move(cases_);
  }

 private:
  const Runtime& runtime_;
  const FamilyInfo& info_;
  DLDevice device_;
  DLDataType dtype_;
  const CaseOptions& options_;
  std::string prefix_;
  std::vector<Case> cases_;
};

}  // namespace

std::vector<Case> ce_cases(const Runtime& runtime, const FamilyInfo& info, DLDevice device,
                           DLDataType dtype, const CaseOptions& options) {
  return CeCaseList(runtime, info, device, dtype, options).build();
}

}  // namespace switchyard::conformance
