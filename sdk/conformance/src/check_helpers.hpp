// Small pieces the case checks of both families share.
#ifndef SWITCHYARD_CONFORMANCE_CHECK_HELPERS_HPP
#define SWITCHYARD_CONFORMANCE_CHECK_HELPERS_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <switchyard/conformance/compare.hpp>
#include <vector>

#include "case.hpp"

namespace switchyard::conformance {

inline bool has_flag(uint32_t flags, uint32_t flag) { return (flags & flag) != 0; }

// The row stride of a strided case: longer than the row, rounded up to 8 elements.
inline int64_t padded_stride(int64_t cols) { return (cols + 1 + 7) / 8 * 8; }

// "rank1 " in a tensor-parallel group, "" for one rank.
std::string rank_prefix(size_t ranks, size_t rank);

double max_abs(const std::vector<double>& values);

// Each value as stored in `dtype`.
std::vector<double> rounded(const std::vector<double>& values, DLDataType dtype);

std::string format_number(double value);

// Adds a failure naming the worst element when got is out of tolerance of expected.
// columns > 0 shows 2-D indices. scale: see find_mismatch.
void compare_values(Failures& failures, const std::string& name, const std::vector<double>& got,
                    const std::vector<double>& expected, const Tolerance& tolerance,
                    int64_t columns, const std::vector<double>* scale = nullptr);

// The first element whose bits differ (nullopt when identical).
std::optional<int64_t> first_bit_difference(const std::vector<double>& a,
                                            const std::vector<double>& b);

// Rows [row, row + count) of `a` (`width` values per row) against rows [0, count) of `b`,
// bit for bit; adds a failure for the first difference. Nothing when both are empty.
void compare_bits(Failures& failures, const std::string& what, const std::vector<double>& a,
                  int64_t row, const std::vector<double>& b, int64_t count, int64_t width);

}  // namespace switchyard::conformance

#endif
