// The one exception type of switchyard-bench: a sentence that says what failed, the expected
// vs. actual value where there is one, and what to do next. main() prints it and exits 1.
#ifndef SWITCHYARD_BENCH_ERROR_HPP
#define SWITCHYARD_BENCH_ERROR_HPP

#include <stdexcept>
#include <string>

namespace switchyard::bench {

class BenchError : public std::runtime_error {
 public:
  explicit BenchError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace switchyard::bench

#endif
