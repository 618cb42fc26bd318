// The normalization case list for one device and x dtype.
#include <switchyard/norm.h>

#include "case.hpp"
#include "norm_case.hpp"
#include "random_data.hpp"

namespace switchyard::conformance {
namespace {

struct Kind {
  sy_norm_kind kind;
  uint32_t feature;
  const char* segment;
};
constexpr Kind kKinds[] = {{SY_NORM_LAYER, SY_NORM_FEATURE_LAYER, "layer"},
                           {SY_NORM_RMS, SY_NORM_FEATURE_RMS, "rms"},
                           {SY_NORM_L2, SY_NORM_FEATURE_L2, "l2"}};

class NormCaseList {
 public:
  NormCaseList(const Runtime& runtime, const FamilyInfo& info, DLDevice device, DLDataType dtype,
               const CaseOptions& options)
      : runtime_(runtime), info_(info), device_(device), dtype_(dtype), options_(options) {
    prefix_ = std::string("norm/") + (device.device_type == kDLCUDA ? "cuda/" : "") +
              short_dtype_name(dtype) + "/";
  }

  bool declares(uint32_t feature) const { return (info_.features & feature) == feature; }

  NormSpec base(const Kind& kind, int64_t rows = 5, int64_t hidden = 127) const {
    NormSpec s;
    s.device = device_;
    s.kind = kind.kind;
    s.rows = rows;
    s.hidden = hidden;
    s.x_dtype = s.y_dtype = s.weight_dtype = s.grad_weight_dtype = dtype_;
    return s;
  }

  // Every request flag the plugin declares that applies to the kind.
  NormSpec all_features(NormSpec s, uint32_t& needs) const {
    auto maybe = [&](uint32_t feature, uint32_t flag) {
      if (!declares(feature)) return;
      s.flags |= flag;
      needs |= feature;
    };
    if (s.kind != SY_NORM_L2) {
      maybe(SY_NORM_FEATURE_ZERO_CENTERED_GAMMA, SY_NORM_ZERO_CENTERED_GAMMA);
      maybe(SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT, SY_NORM_ACCUMULATE_GRAD_WEIGHT);
    }
    maybe(SY_NORM_FEATURE_RESIDUAL, SY_NORM_RESIDUAL);
    maybe(SY_NORM_FEATURE_MEMORY_EFFICIENT, SY_NORM_MEMORY_EFFICIENT);
    if ((s.flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0) s.grad_weight_dtype = kF32;
    return s;
  }

  void add(const Kind& kind, const std::string& variant, NormSpec spec, uint32_t needs,
           bool declared_only, bool all_seeds = false) {
    needs |= kind.feature;
    const std::string key = prefix_ + kind.segment + "/" + variant;
    const std::vector<uint64_t> seeds =
        all_seeds ? options_.seeds : std::vector<uint64_t>{options_.seeds.front()};
    for (uint64_t seed : seeds) {
      Case c;
      c.name = key + "/seed" + std::to_string(seed);
      const uint32_t missing = needs & ~info_.features;
      if (missing != 0) {
        c.skip_reason = "the plugin does not declare " + norm_feature_names(missing);
      } else {
        NormSpec s = spec;
        s.seed = case_seed(key, seed);
        if (declared_only)
          s.declared = short_dtype_name(dtype_) + " x and " + norm_feature_names(needs);
        const Runtime* runtime = &runtime_;
        c.run = [runtime, s] { return run_norm_case(*runtime, s); };
      }
      cases_.push_back(std::move(c));
    }
  }

  void add_kind(const Kind& k) {
    const bool gamma = k.kind != SY_NORM_L2;
    NormSpec s;
    add(k, "basic", base(k), 0, true, true);
    add(k, "h1", base(k, 5, 1), 0, false);
    if (!options_.quick) {
      add(k, "h4096", base(k, 3, 4096), 0, false);
      // Wide, aligned rows that do not split evenly over a GPU block's threads (te: 160 threads
      // of 4 chunks at 16 bits, the last 15 hold 3): per-thread statistics must skip the chunks
      // past the row. Its third row has the large mean that makes a mistake there visible.
      add(k, "h5000", base(k, 3, 5000), 0, false);
      // The same at a width where te's backward takes 512 threads of 16 elements (dy in a ring
      // of its own): 8000 = 1000 chunks, so the last 24 threads hold one chunk, not two.
      add(k, "h8000", base(k, 3, 8000), 0, false);
      // Rows wide and aligned enough for a GPU backend's fast path (te streams them through
      // shared memory from 8 16-bit elements on) with every declared request flag, since the
      // other variants' rows (127) take the general path there. Memory-efficient has its own.
      uint32_t wide_needs = 0;
      s = all_features(base(k, 3, 4096), wide_needs);
      s.flags &= ~SY_NORM_MEMORY_EFFICIENT;
      add(k, "h4096-all-features", s, wide_needs & ~SY_NORM_FEATURE_MEMORY_EFFICIENT, false);
      // Wider rows take other kernels on a GPU backend (te: 512 threads of 16 elements at 8192,
      // dy in a ring of its own): every declared flag there too.
      s = all_features(base(k, 3, 8192), wide_needs);
      s.flags &= ~SY_NORM_MEMORY_EFFICIENT;
      add(k, "h8192-all-features", s, wide_needs & ~SY_NORM_FEATURE_MEMORY_EFFICIENT, false);
      if (k.kind == SY_NORM_LAYER) {
        s = base(k, 3, 4096);
        s.bias = false;
        add(k, "h4096-no-bias", s, 0, false);
      }
    }
    if (k.kind == SY_NORM_LAYER) {
      s = base(k);
      s.bias = false;
      add(k, "no-bias", s, 0, true);
    }
    if (gamma) {
      s = base(k);
      s.flags = SY_NORM_ZERO_CENTERED_GAMMA;
      add(k, "zero-centered-gamma", s, SY_NORM_FEATURE_ZERO_CENTERED_GAMMA, true);
    }
    s = base(k);
    s.flags = SY_NORM_RESIDUAL;
    add(k, "residual", s, SY_NORM_FEATURE_RESIDUAL, true);
    s = base(k);
    s.flags = SY_NORM_MEMORY_EFFICIENT;
    add(k, "memory-efficient", s, SY_NORM_FEATURE_MEMORY_EFFICIENT, true);
    if (k.kind == SY_NORM_LAYER) {
      s.bias = false;
      add(k, "memory-efficient-no-bias", s, SY_NORM_FEATURE_MEMORY_EFFICIENT, true);
    }
    if (gamma) {
      s = base(k);
      s.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
      s.grad_weight_dtype = kF32;
      add(k, "accumulate-grad-weight", s, SY_NORM_FEATURE_ACCUMULATE_GRAD_WEIGHT, true);
    }
    s = base(k);
    s.y_dtype = same_dtype(dtype_, kF32) ? kBF16 : kF32;
    add(k, "y-" + short_dtype_name(s.y_dtype), s, 0, false);
    if (gamma && !same_dtype(dtype_, kF32)) {
      s = base(k);
      s.weight_dtype = s.grad_weight_dtype = kF32;
      add(k, "weight-f32", s, 0, false);
    }
    s = base(k);
    s.strided = true;
    add(k, "strided", s, 0, true);
    s = base(k);
    s.sm_margin = 2;
    add(k, "sm-margin", s, SY_NORM_FEATURE_SM_MARGIN, true);
    uint32_t needs = 0;
    s = all_features(base(k, 5, 127), needs);
    add(k, "all-features", s, needs, true);

    for (NormCheck check : {NormCheck::Replay, NormCheck::BatchInvariance}) {
      const std::string name = check == NormCheck::Replay ? "replay" : "batch-invariance";
      uint32_t determinism_needs = 0;
      s = all_features(base(k, 9, 127), determinism_needs);
      s.check = check;
      if (info_.determinism != SY_DETERMINISTIC) {
        Case c;
        c.name =
            prefix_ + k.segment + "/" + name + "/seed" + std::to_string(options_.seeds.front());
        c.skip_reason = "the plugin does not declare SY_DETERMINISTIC";
        cases_.push_back(std::move(c));
      } else {
        add(k, name, s, determinism_needs, true);
      }
    }
  }

  std::vector<Case> build() {
    for (const Kind& k : kKinds) {
      if (declares(k.feature)) {
        add_kind(k);
      } else {
        Case c;
        c.name = prefix_ + k.segment + "/*";
        c.skip_reason = "the plugin does not declare " + norm_feature_names(k.feature);
        cases_.push_back(std::move(c));
      }
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

std::vector<Case> norm_cases(const Runtime& runtime, const FamilyInfo& info, DLDevice device,
                             DLDataType dtype, const CaseOptions& options) {
  return NormCaseList(runtime, info, device, dtype, options).build();
}

}  // namespace switchyard::conformance
