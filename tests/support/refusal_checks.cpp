#include "refusal_checks.hpp"

#include <doctest/doctest.h>

#include <string>

namespace switchyard::test {

sy_error make_error(int initial_status) {
  sy_error err{};
  err.struct_size = sizeof err;
  err.status = static_cast<sy_status>(initial_status);
  return err;
}

void check_refusal(sy_status got, const sy_error& err, sy_status expected,
                   std::initializer_list<const char*> fragments) {
  INFO("message: " << err.message);
  CHECK(got == expected);
  CHECK(err.status == expected);
  for (const char* fragment : fragments) {
    INFO("expected the message to contain: " << fragment);
    CHECK(std::string(err.message).find(fragment) != std::string::npos);
  }
}

}  // namespace switchyard::test
