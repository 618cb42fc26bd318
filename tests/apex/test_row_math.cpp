// The kernels' per-thread code, emulated on the CPU thread by thread (emulator.hpp), against
// the float64 reference and the tolerances `switchyard check` applies on the GPU.
#include "emulator.hpp"
#include "norm_case.hpp"
#include "plan.hpp"

#include <doctest/doctest.h>

using namespace apex_test;
namespace ap = switchyard::apex;

namespace {

constexpr sy_norm_kind kKinds[] = {SY_NORM_LAYER, SY_NORM_RMS, SY_NORM_L2};
const DLDataType kDtypes[] = {sy::kF32, sy::kBF16, sy::kF16};

NormCase basic(sy_norm_kind kind, DLDataType dtype, int64_t rows, int64_t hidden) {
  NormCase c;
  c.kind = kind;
  c.rows = rows;
  c.hidden = hidden;
  c.x = c.y = c.weight = c.grad_weight = dtype;
  return c;
}

void check_same_bits(const NormOutputs& a, const NormOutputs& b, const char* what) {
  INFO(what);
  CHECK(a.y.same_bits(b.y));
  CHECK(a.mean.same_bits(b.mean));
  CHECK(a.rstd.same_bits(b.rstd));
  CHECK(a.dx.same_bits(b.dx));
  CHECK(a.dweight.same_bits(b.dweight));
  CHECK(a.dbias.same_bits(b.dbias));
}

}  // namespace

TEST_CASE("every path, kind and dtype within the conformance tolerances") {
  // 1, 127: general kernels with partial chunks; 1000: general, whole chunks; 1024 and 5120:
  // fast forward and fused backward (a warp per row; 5 chunks per thread); 12288: fast
  // forward, split backward.
  for (sy_norm_kind kind : kKinds)
    for (DLDataType dtype : kDtypes)
      for (int64_t hidden : {1, 127, 1000, 1024, 5120, 12288}) {
        const NormOutputs out = run_norm_case(basic(kind, dtype, hidden > 5000 ? 3 : 5, hidden));
        CHECK(out.forward_ok);
        CHECK(out.backward_ok);
      }
  CHECK(lane_disagreements() == 0);
}

TEST_CASE("flags: zero-centred gamma, memory-efficient backward, accumulation") {
  const uint32_t all = SY_NORM_ZERO_CENTERED_GAMMA | SY_NORM_MEMORY_EFFICIENT |
                       SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  for (sy_norm_kind kind : kKinds)
    for (int64_t hidden : {127, 4096})
      for (uint32_t flags : {SY_NORM_ZERO_CENTERED_GAMMA, SY_NORM_MEMORY_EFFICIENT,
                             SY_NORM_ACCUMULATE_GRAD_WEIGHT, all}) {
        NormCase c = basic(kind, sy::kBF16, 5, hidden);
        c.flags = flags;
        if ((flags & SY_NORM_ACCUMULATE_GRAD_WEIGHT) != 0) c.grad_weight = sy::kF32;
        const NormOutputs out = run_norm_case(c);
        CHECK(out.forward_ok);
        CHECK(out.backward_ok);
      }
}

TEST_CASE("LayerNorm without beta, in both backward modes; dgamma or dbeta alone") {
  for (int64_t hidden : {127, 2048})
    for (uint32_t flags : {0u, SY_NORM_MEMORY_EFFICIENT}) {
      NormCase c = basic(SY_NORM_LAYER, sy::kF16, 5, hidden);
      c.bias = false;
      c.flags = flags;
      CHECK(run_norm_case(c).backward_ok);
      c.dweight = false;
      CHECK(run_norm_case(c).backward_ok);
      c.dweight = true;
      c.dbias = false;
      CHECK(run_norm_case(c).backward_ok);
      c.dweight = false;  // dx alone: no partial sums at all
      CHECK(run_norm_case(c).backward_ok);
    }
}

TEST_CASE("mixed dtypes: y in float32, weights in float32, grads in another dtype") {
  for (DLDataType x : {sy::kBF16, sy::kF16})
    for (int64_t hidden : {127, 4096})
      for (sy_norm_kind kind : kKinds)
        for (uint32_t flags : {0u, SY_NORM_MEMORY_EFFICIENT}) {
          NormCase c = basic(kind, x, 4, hidden);
          c.y = sy::kF32;  // general forward, split backward (dy float32; y float32 read back)
          c.flags = flags;
          NormOutputs out = run_norm_case(c);
          CHECK(out.forward_ok);
          CHECK(out.backward_ok);
          c = basic(kind, x, 4, hidden);
          c.weight = sy::kF32;
          c.grad_weight = x.code == kDLBfloat ? sy::kF16 : sy::kBF16;
          c.flags = flags | SY_NORM_ZERO_CENTERED_GAMMA;
          out = run_norm_case(c);
          CHECK(out.forward_ok);
          CHECK(out.backward_ok);
        }
}

TEST_CASE("16-byte and element-wise access give the same bits (padding, misalignment)") {
  for (int64_t hidden : {1024, 4096, 12288, 1000})
    for (DLDataType dtype : {sy::kBF16, sy::kF32})
      for (sy_norm_kind kind : {SY_NORM_LAYER, SY_NORM_RMS}) {
        NormCase c = basic(kind, dtype, 3, hidden);
        c.flags = SY_NORM_ZERO_CENTERED_GAMMA;
        const NormOutputs aligned = run_norm_case(c);
        CHECK(aligned.vector_access);
        NormCase padded = c;
        padded.pad = 3;  // rows no longer 16-byte aligned
        const NormOutputs p = run_norm_case(padded);
        CHECK_FALSE(p.vector_access);
        check_same_bits(aligned, p, "padded rows");
        NormCase shifted = c;
        shifted.misalign = 2 * (dtype.bits / 8);
        const NormOutputs s = run_norm_case(shifted);
        CHECK_FALSE(s.vector_access);
        check_same_bits(aligned, s, "misaligned start");
        NormCase wide = c;
        wide.pad = 8;  // padded but still aligned
        const NormOutputs w = run_norm_case(wide);
        CHECK(w.vector_access);
        check_same_bits(aligned, w, "aligned padding");
      }
}

TEST_CASE("chunks of several rows: the fused and the split dgamma/dbeta") {
  // 8192: at most 256 chunks, so 300 rows make chunks of 2 rows (the last one short).
  NormCase fused = basic(SY_NORM_LAYER, sy::kBF16, 300, 8192);
  REQUIRE(ap::row_partition(300, 8192).rows_per_chunk == 2);
  REQUIRE(ap::backward_path(8192, ap::Dtype::BF16, ap::Dtype::BF16) == ap::BackwardPath::Fused);
  fused.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  fused.grad_weight = sy::kF32;
  NormOutputs out = run_norm_case(fused);
  CHECK(out.forward_ok);
  CHECK(out.backward_ok);
  // 12288: 170 chunks at most; 341 rows make chunks of 3 rows, the last of 2.
  NormCase split = basic(SY_NORM_RMS, sy::kF16, 341, 12288);
  REQUIRE(ap::row_partition(341, 12288).rows_per_chunk == 3);
  REQUIRE(ap::backward_path(12288, ap::Dtype::F16, ap::Dtype::F16) == ap::BackwardPath::Split);
  out = run_norm_case(split);
  CHECK(out.forward_ok);
  CHECK(out.backward_ok);
}

TEST_CASE("the widest rows: 32768 (fast forward, 1024 threads) and 65536 (general)") {
  for (int64_t hidden : {32768, 65536}) {
    NormCase c = basic(SY_NORM_LAYER, sy::kBF16, 2, hidden);
    const NormOutputs out = run_norm_case(c);
    CHECK(out.forward_ok);
    CHECK(out.backward_ok);
  }
  CHECK(lane_disagreements() == 0);
}

TEST_CASE("Welford keeps LayerNorm statistics accurate far from zero") {
  for (int64_t hidden : {4096, 1000}) {
    NormCase c = basic(SY_NORM_LAYER, sy::kF32, 4, hidden);
    c.x_offset = 1000.0;  // mean 1000, variance 3: a naive E[x²] − E[x]² loses it in fp32
    // y = (x − mean)·rstd·γ + β with an fp32 mean: up to ulp(1000)/2 · rstd · |γ| ≈ 4e-5 off.
    c.y_extra_atol = 1e-4;
    const NormOutputs out = run_norm_case(c);
    CHECK(out.statistics_ok);  // mean and rstd to 1e-5: what Welford is for
    CHECK(out.forward_ok);
    CHECK(out.backward_ok);
  }
}

TEST_CASE("no rows: nothing written but dgamma/dbeta (zeros, or unchanged when accumulating)") {
  NormCase c = basic(SY_NORM_LAYER, sy::kBF16, 0, 1024);
  NormOutputs out = run_norm_case(c);
  CHECK(out.backward_ok);
  c.flags = SY_NORM_ACCUMULATE_GRAD_WEIGHT;
  c.grad_weight = sy::kF32;
  out = run_norm_case(c);
  CHECK(out.backward_ok);
}

TEST_CASE("batch invariance: a row's results do not depend on the rows around it") {
  for (int64_t hidden : {127, 1024, 8192}) {
    NormCase full = basic(SY_NORM_LAYER, sy::kBF16, 9, hidden);
    full.flags = SY_NORM_ZERO_CENTERED_GAMMA;
    const NormOutputs whole = run_norm_case(full);
    NormCase part = full;
    part.data_rows = 9;
    part.first_row = 4;
    part.rows = 3;
    const NormOutputs sub = run_norm_case(part);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < hidden; ++j) {
        if (whole.y.get(4 + i, j) != sub.y.get(i, j) || whole.dx.get(4 + i, j) != sub.dx.get(i, j)) {
          FAIL_CHECK("row " << 4 + i << " differs at column " << j << " (H=" << hidden << ")");
          i = 3;
          break;
        }
      }
    for (int64_t i = 0; i < 3; ++i) {
      CHECK(whole.mean.get(0, 4 + i) == sub.mean.get(0, i));
      CHECK(whole.rstd.get(0, 4 + i) == sub.rstd.get(0, i));
    }
  }
}
