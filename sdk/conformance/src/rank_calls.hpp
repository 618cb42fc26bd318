// Calling into a plugin: on every rank of a group (one thread per rank), turning errors into
// CallError values so that one rank's failure cannot take the suite down.
#ifndef SWITCHYARD_CONFORMANCE_RANK_CALLS_HPP
#define SWITCHYARD_CONFORMANCE_RANK_CALLS_HPP

#include "case.hpp"

#include <functional>
#include <vector>

namespace switchyard::conformance {

// Runs call() and returns its error (status SY_OK when it returned normally).
CallError invoke(const std::function<void()>& call);

// Runs call(rank) for every rank: inline for one rank, else one thread per rank (the ranks of
// an in-process group must run concurrently).
void run_on_ranks(int ranks, const std::function<void(int rank)>& call);

// CaseFailure naming each rank whose call failed ("forward failed: rank 1: SY_ERR_...: ...").
void fail_on_errors(const std::string& what, const std::vector<CallError>& errors);

// The first element whose bits differ (nullopt when identical; sizes must match).
std::optional<int64_t> first_bit_difference(const std::vector<double>& a,
                                            const std::vector<double>& b);

std::string format_number(double value);

}  // namespace switchyard::conformance

#endif
