#include "rank_calls.hpp"

#include <exception>
#include <thread>

namespace switchyard::conformance {

CallError invoke(const std::function<void()>& call) {
  try {
    call();
    return {};
  } catch (const Error& e) {
    return {e.status(), e.what()};
  } catch (const std::exception& e) {
    return {SY_ERR_INTERNAL, std::string("C++ exception: ") + e.what()};
  }
}

void run_on_ranks(int ranks, const std::function<void(int rank)>& call) {
  if (ranks == 1) {
    call(0);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (int r = 0; r < ranks; ++r) threads.emplace_back(call, r);
  for (auto& t : threads) t.join();
}

void fail_on_errors(const std::string& what, const std::vector<CallError>& errors) {
  std::vector<std::string> failed;
  for (size_t r = 0; r < errors.size(); ++r) {
    if (errors[r].status == SY_OK) continue;
    failed.push_back(errors.size() > 1 ? "rank " + std::to_string(r) + ": " + errors[r].describe()
                                       : errors[r].describe());
  }
  if (!failed.empty()) throw CaseFailure{what + " failed: " + join(failed, "; ")};
}

}  // namespace switchyard::conformance
