// Calling into a plugin: on every rank of a group (one thread per rank), turning errors into
// CallError values so that one rank's failure cannot take the suite down.
#ifndef SWITCHYARD_CONFORMANCE_RANK_CALLS_HPP
#define SWITCHYARD_CONFORMANCE_RANK_CALLS_HPP

#include <functional>
#include <vector>

#include "case.hpp"

namespace switchyard::conformance {

// Runs call() and returns its error (status SY_OK when it returned normally).
CallError invoke(const std::function<void()>& call);

// Runs call(rank) for every rank: inline for one rank, else one thread per rank (the ranks of
// an in-process group must run concurrently).
void run_on_ranks(int ranks, const std::function<void(int rank)>& call);

// CaseFailure naming each rank whose call failed ("forward failed: rank 1: SY_ERR_...: ...").
void fail_on_errors(const std::string& what, const std::vector<CallError>& errors);

}  // namespace switchyard::conformance

#endif
