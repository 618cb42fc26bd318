// What the plugin suites check after an ABI call: the sy_error they pass and whether a call was
// refused with the expected status and a message that says why.
#ifndef SWITCHYARD_TESTS_REFUSAL_CHECKS_HPP
#define SWITCHYARD_TESTS_REFUSAL_CHECKS_HPP

#include <switchyard/abi.h>

#include <initializer_list>

namespace switchyard::test {

// An error struct ready for a call: struct_size set, an empty message and `initial_status`
// (a value no plugin writes, such as -1, shows that the plugin wrote the status itself).
sy_error make_error(int initial_status = SY_OK);

// CHECKs that a call returned `expected`, that err.status says the same and that err.message
// contains every fragment.
void check_refusal(sy_status got, const sy_error& err, sy_status expected,
                   std::initializer_list<const char*> fragments);

}  // namespace switchyard::test

#endif
