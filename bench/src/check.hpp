// Comparison of an output with its float64 reference: a relative error for people, and
// PASS/FAIL under the conformance suite's tolerances (docs/semantics.md), reused from
// Switchyard::conformance so that the benchmark and `switchyard check` judge alike.
#ifndef SWITCHYARD_BENCH_CHECK_HPP
#define SWITCHYARD_BENCH_CHECK_HPP

#include "result.hpp"

#include <switchyard/conformance/compare.hpp>

#include <string>
#include <vector>

namespace switchyard::bench {

// `columns` > 0 shows the worst element as [row, column]; `scale` replaces |expected| as the
// base of a relative tolerance (row sums).
OutputCheck check_output(const std::string& tensor, const std::vector<double>& got,
                         const std::vector<double>& expected,
                         const conformance::Tolerance& tolerance, int64_t columns = 0,
                         const std::vector<double>* scale = nullptr);

double max_abs(const std::vector<double>& values);

}  // namespace switchyard::bench

#endif
