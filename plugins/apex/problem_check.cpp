#include "problem_check.hpp"

#include <switchyard/plugin_helpers.hpp>

#include <cmath>
#include <cstdio>

namespace switchyard::apex {
namespace {

constexpr uint32_t kKnownFlags = SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_RESIDUAL |
                                 SY_NORM_MEMORY_EFFICIENT | SY_NORM_ACCUMULATE_GRAD_WEIGHT;

[[noreturn]] void invalid(const std::string& message) {
  sy::fail(SY_ERR_INVALID_ARGUMENT, message);
}
[[noreturn]] void unsupported(const std::string& message) {
  sy::fail(SY_ERR_UNSUPPORTED, message);
}

std::string hex(uint32_t v) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%x", v);
  return buffer;
}

std::string real(float v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(v));
  return buffer;
}

// The data dtype of a problem field, or UNSUPPORTED naming the field.
Dtype data_dtype(DLDataType t, const char* field) {
  if (sy::same(t, sy::kF32)) return Dtype::F32;
  if (sy::same(t, sy::kBF16)) return Dtype::BF16;
  if (sy::same(t, sy::kF16)) return Dtype::F16;
  unsupported(std::string("problem.") + field + " = " + sy::dtype_name(t) +
              " is not supported by apex; supported: float32, bfloat16, float16");
}

}  // namespace

const char* kind_name(NormKind kind) {
  switch (kind) {
    case NormKind::Layer: return "LayerNorm";
    case NormKind::Rms: return "RMSNorm";
    default: return "L2Norm";
  }
}

DLDataType dl_dtype(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32: return sy::kF32;
    case Dtype::BF16: return sy::kBF16;
    default: return sy::kF16;
  }
}

int64_t dtype_bytes(Dtype dtype) { return dtype == Dtype::F32 ? 4 : 2; }

Problem check_problem(const sy_norm_problem* problem) {
  if (problem == nullptr) invalid("problem is NULL");
  if (problem->struct_size < sizeof(sy_norm_problem))
    invalid("problem.struct_size = " + std::to_string(problem->struct_size) +
            " is smaller than sizeof(sy_norm_problem) = " +
            std::to_string(sizeof(sy_norm_problem)) +
            " of ABI v1.0; set struct_size = sizeof(sy_norm_problem)");
  const sy_norm_problem& p = *problem;
  Problem r;
  switch (p.kind) {
    case SY_NORM_LAYER: r.kind = NormKind::Layer; break;
    case SY_NORM_RMS: r.kind = NormKind::Rms; break;
    case SY_NORM_L2: r.kind = NormKind::L2; break;
    default:
      invalid("problem.kind = " + std::to_string(p.kind) +
              " is not SY_NORM_LAYER (0), SY_NORM_RMS (1) or SY_NORM_L2 (2)");
  }
  if (p.rows < 0) invalid("problem.rows = " + std::to_string(p.rows) + " must be >= 0");
  if (p.hidden < 1) invalid("problem.hidden = " + std::to_string(p.hidden) + " must be >= 1");
  if (p.hidden > kMaxHidden)
    unsupported("problem.hidden = " + std::to_string(p.hidden) + " exceeds apex's limit of " +
                std::to_string(kMaxHidden) + " columns");
  if (!(p.eps > 0.0f) || !std::isfinite(p.eps))
    invalid("problem.eps = " + real(p.eps) +
            " must be a finite number > 0 (typically 1e-5 or 1e-6)");
  if (p.sm_margin < 0)
    invalid("problem.sm_margin = " + std::to_string(p.sm_margin) +
            " must be >= 0 (the number of SMs to leave free)");
  if (p.device.device_type != kDLCUDA)
    unsupported("problem.device = " + sy::device_name(p.device) +
                ": apex runs on CUDA devices only (its norm family declares devices = cuda); "
                "use a CPU backend (native) for CPU tensors");

  r.x_dtype = data_dtype(p.x_dtype, "x_dtype");
  r.y_dtype = data_dtype(p.y_dtype, "y_dtype");
  if (r.y_dtype != r.x_dtype && r.y_dtype != Dtype::F32)
    unsupported("problem.y_dtype = " + sy::dtype_name(p.y_dtype) + " with x_dtype = " +
                sy::dtype_name(p.x_dtype) +
                " is not built: apex writes y in x's dtype or in float32");
  if (r.kind != NormKind::L2) {
    r.weight_dtype = data_dtype(p.weight_dtype, "weight_dtype");
    r.grad_weight_dtype = data_dtype(p.grad_weight_dtype, "grad_weight_dtype");
  }

  if ((p.flags & ~kKnownFlags) != 0)
    unsupported("problem.flags has bits " + hex(p.flags & ~kKnownFlags) +
                " that apex does not know; it knows SY_NORM_ZERO_CENTERED_GAMMA | "
                "SY_NORM_RESIDUAL | SY_NORM_MEMORY_EFFICIENT | "
                "SY_NORM_ACCUMULATE_GRAD_WEIGHT (" + hex(kKnownFlags) + ")");
  if ((p.flags & SY_NORM_RESIDUAL) != 0)
    unsupported("problem.flags has SY_NORM_RESIDUAL, which apex does not implement (Apex's "
                "FusedLayerNorm/FusedRMSNorm normalise x alone); add the residual before the "
                "norm, or choose a backend that declares SY_NORM_FEATURE_RESIDUAL (native does)");
  r.zero_centered_gamma = (p.flags & SY_NORM_ZERO_CENTERED_GAMMA) != 0;
  r.memory_efficient = (p.flags & SY_NORM_MEMORY_EFFICIENT) != 0;
  r.accumulate = (p.flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0;
  if (r.accumulate && r.kind != NormKind::L2 && r.grad_weight_dtype != Dtype::F32)
    invalid("problem.grad_weight_dtype = " + sy::dtype_name(p.grad_weight_dtype) +
            " but SY_NORM_ACCUMULATE_GRAD_WEIGHT accumulates into float32 buffers; use "
            "float32 or clear the flag");

  r.rows = p.rows;
  r.hidden = p.hidden;
  r.eps = p.eps;
  r.device = p.device;
  r.sm_margin = p.sm_margin;
  return r;
}

}  // namespace switchyard::apex
