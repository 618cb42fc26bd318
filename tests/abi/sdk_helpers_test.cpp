// The SDK's header-only C++ helpers that every bundled plugin checks its arguments with:
// exact overlap of strided tensors, the in-place rules, the families' argument rules and the
// capability names. (The plugins' suites check the same rules through each plugin's ABI.)
#include <switchyard/capability_names.hpp>
#include <switchyard/ce_checks.hpp>
#include <switchyard/norm_checks.hpp>
#include <switchyard/plugin_helpers.hpp>
#include <switchyard/tensor_layout.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

// A descriptor over a fake address; nothing here reads tensor data.
struct View {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLTensor t{};
  View(uintptr_t address, DLDataType dtype, std::vector<int64_t> shape_in, int64_t row_stride = 0)
      : shape(std::move(shape_in)) {
    t.data = reinterpret_cast<void*>(address);
    t.device = kCpu;
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
    if (row_stride != 0) {
      strides = {row_stride, 1};
      t.strides = strides.data();
    }
  }
  const DLTensor* get() const { return &t; }
  DLTensor* get() { return &t; }
};

// The message of the sy::Failure `action` throws with `status`; "" (and a failed check) when
// it throws nothing.
std::string failure_of(const std::function<void()>& action, sy_status status) {
  try {
    action();
  } catch (const sy::Failure& f) {
    CHECK(f.status() == status);
    return f.what();
  }
  FAIL_CHECK("no sy::Failure thrown");
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("overlap: disjoint, the same tensor, partial, and rows that interleave") {
  const uintptr_t base = 0x10000;
  const View a(base, sy::kF32, {4, 8}, 16);  // rows of 32 bytes every 64 bytes
  // The same elements, dtype and layout: an in-place pair.
  CHECK(sy::overlap(*a.get(), *View(base, sy::kF32, {4, 8}, 16).get()) == sy::Overlap::Same);
  // The gaps between a's rows: no byte in common, although the byte ranges interleave.
  const View gaps(base + 32, sy::kF32, {4, 8}, 16);
  CHECK(sy::overlap(*a.get(), *gaps.get()) == sy::Overlap::None);
  CHECK(sy::overlap(*gaps.get(), *a.get()) == sy::Overlap::None);
  // Four bytes into the gaps: the last element of each row of a is shared.
  CHECK(sy::overlap(*a.get(), *View(base + 28, sy::kF32, {4, 8}, 16).get()) ==
        sy::Overlap::Partial);
  // Same address, other dtype: not an in-place pair.
  CHECK(sy::overlap(*a.get(), *View(base, sy::kI32, {4, 8}, 16).get()) == sy::Overlap::Partial);
  // Same first byte, other row stride.
  CHECK(sy::overlap(*a.get(), *View(base, sy::kF32, {4, 8}, 8).get()) == sy::Overlap::Partial);
  // After the last row, and an empty tensor anywhere.
  CHECK(sy::overlap(*a.get(), *View(base + 3 * 64 + 32, sy::kF32, {4}).get()) == sy::Overlap::None);
  CHECK(sy::overlap(*a.get(), *View(base, sy::kF32, {0, 8}).get()) == sy::Overlap::None);
  // A vector inside one row.
  CHECK(sy::overlap(*a.get(), *View(base + 64 + 4, sy::kF32, {2}).get()) == sy::Overlap::Partial);
}

TEST_CASE("in-place rules: the same tensor or no shared byte; outputs never share") {
  const View x(0x20000, sy::kBF16, {3, 16}, 32);
  sy::require_same_or_disjoint(x.get(), "y", x.get(), "x");
  sy::require_same_or_disjoint(nullptr, "y", x.get(), "x");
  sy::require_same_or_disjoint(View(0x20000 + 32, sy::kBF16, {3, 16}, 32).get(), "y", x.get(), "x");
  const std::string partial = failure_of(
      [&] {
        sy::require_same_or_disjoint(View(0x20000 + 2, sy::kF16, {3, 16}, 32).get(), "y", x.get(),
                                     "x");
      },
      SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(partial, "y partly overlaps x (y is float16, x is bfloat16)"));
  CHECK(contains(partial, "very same tensor"));
  const std::string outputs = failure_of(
      [&] { sy::require_disjoint(x.get(), "dweight", x.get(), "dbias"); }, SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(outputs, "dweight overlaps dbias"));
}

TEST_CASE("workspace, struct sizes and sizes that overflow") {
  sy::require_workspace(nullptr, 0, 0, "acme");
  CHECK(contains(
      failure_of([] { sy::require_workspace(nullptr, 8, 256, "acme"); }, SY_ERR_INVALID_ARGUMENT),
      "workspace_bytes = 8 is too small: acme needs 256 bytes"));
  CHECK(contains(
      failure_of([] { sy::require_workspace(nullptr, 256, 256, "acme"); }, SY_ERR_INVALID_ARGUMENT),
      "workspace is NULL but acme needs 256 bytes"));
  alignas(16) static char buffer[64];
  sy::require_workspace(buffer, 64, 32, "acme", 16);
  CHECK(contains(failure_of([] { sy::require_workspace(buffer + 4, 60, 32, "acme", 16); },
                            SY_ERR_INVALID_ARGUMENT),
                 "workspace is not 16-byte aligned"));
  CHECK(contains(
      failure_of([] { sy::require_struct_size(8, 16, "problem"); }, SY_ERR_INVALID_ARGUMENT),
      "problem.struct_size = 8 is smaller than the 16 bytes"));
  CHECK(sy::checked_multiply(1 << 20, 1 << 20, "n") == int64_t{1} << 40);
  CHECK(contains(failure_of([] { sy::checked_multiply(int64_t{1} << 40, 1 << 24, "rows x V"); },
                            SY_ERR_INVALID_ARGUMENT),
                 "rows x V overflows"));
  CHECK(sy::align_up(257, 256) == 512);
  CHECK(sy::align_up(256, 256) == 256);
}

TEST_CASE("cross-entropy rules: problem, flags, communicator, tensors with a plugin's rule") {
  sy_ce_problem p{};
  p.struct_size = sizeof p;
  p.rows = 2;
  p.vocab_local = p.vocab_size = 8;
  p.logits_dtype = p.grad_dtype = sy::kF32;
  p.label_dtype = sy::kI64;
  p.device = kCpu;
  p.tp_size = 1;
  sy::check_ce_problem(&p, "acme");
  sy_ce_problem gathered = p;
  gathered.tp_size = 2;
  CHECK(contains(
      failure_of([&] { sy::check_ce_problem(&gathered, "acme"); }, SY_ERR_INVALID_ARGUMENT),
      "look like gathered (full-vocabulary) logits"));
  sy_ce_problem f64 = p;
  f64.logits_dtype = sy::kF64;
  CHECK(contains(failure_of([&] { sy::check_ce_problem(&f64, "acme"); }, SY_ERR_UNSUPPORTED),
                 "problem.logits_dtype = float64 is not supported by acme"));
  CHECK(contains(failure_of([] { sy::require_known_ce_flags(0x100, "acme"); }, SY_ERR_UNSUPPORTED),
                 "problem.flags has bits 0x100 that acme does not know"));

  sy_ce_problem tp = p;
  tp.tp_size = 2;
  tp.vocab_size = 16;
  sy_comm comm{};
  comm.struct_size = sizeof comm;
  comm.size = 2;
  comm.device = kCpu;
  CHECK(contains(
      failure_of([&] { sy::check_ce_comm(nullptr, tp, sy::Collective::AllReduce, "acme"); },
                 SY_ERR_INVALID_ARGUMENT),
      "tp is NULL but problem.tp_size = 2"));
  CHECK(
      contains(failure_of([&] { sy::check_ce_comm(&comm, tp, sy::Collective::AllGather, "acme"); },
                          SY_ERR_INVALID_ARGUMENT),
               "tp->all_gather is NULL; acme needs all_gather"));

  const View logits(0x30000, sy::kF32, {2, 8});
  const View labels(0x31000, sy::kI64, {2});
  View loss(0x32000, sy::kF32, {2});
  View lse(0x33001, sy::kF32, {2});  // not on a 4-byte boundary
  sy_ce_forward_args a{};
  a.struct_size = sizeof a;
  a.problem = &p;
  a.logits = logits.get();
  a.labels = labels.get();
  a.loss = loss.get();
  a.lse = lse.get();
  CHECK(&sy::ce_problem_of(&a) == &p);
  sy::check_ce_forward_tensors(a);
  static std::vector<std::string> seen;
  seen.clear();
  const std::string refused = failure_of(
      [&] {
        sy::check_ce_forward_tensors(a, [](const DLTensor* t, const char* name) {
          seen.emplace_back(name);
          if (reinterpret_cast<uintptr_t>(t->data) % 4 != 0)
            sy::invalid_argument(std::string(name) + " is misaligned");
        });
      },
      SY_ERR_INVALID_ARGUMENT);
  CHECK(refused == "lse is misaligned");
  CHECK(seen == std::vector<std::string>{"logits", "labels", "loss", "lse"});
  p.flags = SY_CE_ARGMAX;
  CHECK(contains(failure_of([&] { sy::check_ce_forward_tensors(a); }, SY_ERR_INVALID_ARGUMENT),
                 "argmax is NULL but problem.flags has SY_CE_ARGMAX"));
}

TEST_CASE("norm rules: problem, parameters by kind, flagged tensors, aliasing") {
  sy_norm_problem p{};
  p.struct_size = sizeof p;
  p.kind = SY_NORM_L2;
  p.rows = 2;
  p.hidden = 8;
  p.eps = 1e-5f;
  p.x_dtype = p.y_dtype = p.weight_dtype = p.grad_weight_dtype = sy::kBF16;
  p.device = kCpu;
  sy::check_norm_problem(&p, "acme");
  sy_norm_problem bad_eps = p;
  bad_eps.eps = 0.0f;
  CHECK(contains(
      failure_of([&] { sy::check_norm_problem(&bad_eps, "acme"); }, SY_ERR_INVALID_ARGUMENT),
      "problem.eps = 0 must be a finite number > 0"));
  sy_norm_problem accumulate = p;
  accumulate.kind = SY_NORM_RMS;
  accumulate.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  CHECK(contains(
      failure_of([&] { sy::check_norm_problem(&accumulate, "acme"); }, SY_ERR_INVALID_ARGUMENT),
      "SY_NORM_ACCUMULATE_GRAD_WEIGHT accumulates into float32"));
  CHECK(std::string(sy::norm_kind_name(SY_NORM_RMS)) == "RMSNorm");

  View x(0x40000, sy::kBF16, {2, 8});
  View y(0x41000, sy::kBF16, {2, 8});
  View rstd(0x42000, sy::kF32, {2});
  const View weight(0x43000, sy::kBF16, {8});
  sy_norm_forward_args a{};
  a.struct_size = sizeof a;
  a.problem = &p;
  a.x = x.get();
  a.y = y.get();
  a.rstd = rstd.get();
  sy::check_norm_forward_tensors(a);
  sy::check_norm_forward_aliasing(a);
  a.weight = weight.get();
  CHECK(contains(failure_of([&] { sy::check_norm_forward_tensors(a); }, SY_ERR_INVALID_ARGUMENT),
                 "weight is set but problem.kind = L2Norm has no gamma"));
  a.weight = nullptr;
  a.residual = x.get();
  CHECK(contains(failure_of([&] { sy::check_norm_forward_tensors(a); }, SY_ERR_INVALID_ARGUMENT),
                 "residual is set but problem.flags lacks SY_NORM_RESIDUAL"));
  a.residual = nullptr;
  View y_shifted(0x40000 + 2, sy::kBF16, {2, 8});
  a.y = y_shifted.get();
  CHECK(contains(failure_of([&] { sy::check_norm_forward_aliasing(a); }, SY_ERR_INVALID_ARGUMENT),
                 "y partly overlaps x"));
  a.y = x.get();  // in place
  sy::check_norm_forward_aliasing(a);
}

TEST_CASE("capability names: the table's words, bitN for a bit without one") {
  CHECK(sy::dtype_names(SY_DTYPE_F32 | SY_DTYPE_BF16) ==
        std::vector<std::string>{"float32", "bfloat16"});
  CHECK(sy::device_names(SY_DEVICE_BIT(kDLCUDA)) == std::vector<std::string>{"cuda"});
  CHECK(sy::ce_feature_names(SY_CE_FEATURE_ARGMAX | (1u << 20)) ==
        std::vector<std::string>{"argmax", "bit20"});
  CHECK(sy::norm_feature_names(SY_NORM_FEATURE_SM_MARGIN | SY_FEATURE_GRAPH_CAPTURE) ==
        std::vector<std::string>{"sm_margin", "graph_capture"});
  CHECK(std::string(sy::determinism_name(SY_NONDETERMINISTIC)) == "nondeterministic");
}
