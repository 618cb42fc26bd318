// The plan (plan.hpp): shapes that the kernels' static_asserts and reductions rely on, paths
// that depend on the problem only, and a row partition that covers every row once.
#include "plan.hpp"
#include "row_math.hpp"

#include <doctest/doctest.h>

#include <set>
#include <vector>

namespace ap = switchyard::apex;

TEST_CASE("fast shapes: whole warps, one row per thread group, chunks cover the row once") {
  for (const ap::FastShape& s : ap::kFastShapes) {
    CAPTURE(s.hidden);
    CHECK(s.threads % 32 == 0);
    CHECK(s.threads >= 32);
    CHECK(s.threads * s.rows_per_block <= 1024);
    CHECK((s.rows_per_block == 1 || s.threads == 32));
    CHECK(static_cast<int64_t>(s.threads) * s.chunks_per_thread * ap::kChunkElements == s.hidden);
    CHECK(ap::fast_shape(s.hidden) == &s);
    // The fused backward keeps x, dy and the dgamma/dbeta sums of 8·CPT columns in registers.
    CHECK(s.fused_backward == (s.hidden <= 8192));
    std::vector<int> owner(static_cast<size_t>(s.hidden / ap::kChunkElements), -1);
    for (int t = 0; t < s.threads; ++t)
      for (int i = 0; i < s.chunks_per_thread; ++i) {
        const int64_t chunk = ap::fast_offset(i, t, s.threads) / ap::kChunkElements;
        REQUIRE(chunk < static_cast<int64_t>(owner.size()));
        CHECK(owner[chunk] == -1);
        owner[chunk] = t;
      }
    for (int o : owner) CHECK(o >= 0);
  }
  for (int64_t hidden : {1, 127, 1000, 3072, 7168, 65536}) CHECK(ap::fast_shape(hidden) == nullptr);
}

TEST_CASE("paths depend on the hidden size and the dtypes only") {
  using ap::Dtype;
  CHECK(ap::forward_path(4096, Dtype::BF16, Dtype::BF16) == ap::ForwardPath::Fast);
  CHECK(ap::forward_path(32768, Dtype::F32, Dtype::F32) == ap::ForwardPath::Fast);
  CHECK(ap::forward_path(4096, Dtype::BF16, Dtype::F32) == ap::ForwardPath::General);
  CHECK(ap::forward_path(4000, Dtype::BF16, Dtype::BF16) == ap::ForwardPath::General);
  CHECK(ap::backward_path(8192, Dtype::F16, Dtype::F16) == ap::BackwardPath::Fused);
  CHECK(ap::backward_path(12288, Dtype::F16, Dtype::F16) == ap::BackwardPath::Split);
  CHECK(ap::backward_path(8192, Dtype::F16, Dtype::F32) == ap::BackwardPath::Split);
  CHECK(ap::backward_path(127, Dtype::F32, Dtype::F32) == ap::BackwardPath::Split);
}

TEST_CASE("general kernels: whole warps, at most 1024 threads, about 4 chunks each") {
  for (int64_t hidden = 1; hidden <= 70000; hidden += hidden < 300 ? 1 : 997) {
    CAPTURE(hidden);
    const int threads = ap::general_threads(hidden);
    CHECK(threads % 32 == 0);
    CHECK(threads >= 32);
    CHECK(threads <= 1024);
    const int64_t chunks = ap::chunk_count(hidden);
    if (threads > 32 && threads < 1024) CHECK(chunks > 4 * (threads - 32));
    if (threads < 1024) CHECK(chunks <= 4 * threads);
    CHECK(ap::general_rows_per_block(threads) * threads <= 1024);
    // The last chunk holds what is left; every column is in exactly one chunk.
    int64_t covered = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      const int valid = ap::chunk_valid(hidden, c);
      CHECK(valid >= 1);
      CHECK(valid <= 8);
      covered += valid;
    }
    CHECK(covered == hidden);
  }
}

TEST_CASE("the row partition: every row in one chunk, at most partial_limit chunks") {
  for (int64_t hidden : {1, 127, 1024, 4096, 8192, 12288, 65536, 1 << 22})
    for (int64_t rows : {0, 1, 2, 63, 64, 65, 255, 256, 257, 1000, 16384, 1000003}) {
      CAPTURE(hidden);
      CAPTURE(rows);
      const ap::RowPartition p = ap::row_partition(rows, hidden);
      const int64_t limit = ap::partial_limit(hidden);
      CHECK(limit >= 1);
      CHECK(limit <= 1024);
      CHECK(p.chunks <= limit);
      CHECK(p.rows_per_chunk >= 1);
      if (rows == 0) {
        CHECK(p.chunks == 0);
        continue;
      }
      CHECK((p.chunks - 1) * p.rows_per_chunk < rows);  // the last chunk is not empty
      CHECK(p.chunks * p.rows_per_chunk >= rows);       // and all rows are covered
      // As few rows per chunk as the limit allows (most parallelism).
      CHECK((p.rows_per_chunk == 1 || (p.rows_per_chunk - 1) * limit < rows));
    }
  // The benchmark shapes: 512 chunks of 32 rows at 4096, 256 chunks of 64 rows at 8192.
  CHECK(ap::row_partition(16384, 4096).chunks == 512);
  CHECK(ap::row_partition(16384, 8192).rows_per_chunk == 64);
}

TEST_CASE("workspace: regions of [chunks, H] floats after 256 bytes of alignment slack") {
  using ap::NormKind;
  CHECK(ap::workspace_bytes(NormKind::L2, 100, 100) == 0);
  CHECK(ap::workspace_bytes(NormKind::Rms, 0, 100) == 0);
  CHECK(ap::workspace_bytes(NormKind::Rms, 3, 100) == 256 + 1280);
  CHECK(ap::workspace_bytes(NormKind::Layer, 3, 100) == 256 + 2 * 1280);
  CHECK(ap::partial_region_bytes(3, 100) % ap::kWorkspaceAlignment == 0);
}
