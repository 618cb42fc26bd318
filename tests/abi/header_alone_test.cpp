// Every public header was compiled alone as C99 and as C++17 (see CMakeLists.txt: the build
// fails if one does not compile). Here: both languages agree on the size of each header's
// main struct, and so does this C++ translation unit.
#include "header_alone_table.hpp"

#include <doctest/doctest.h>

TEST_CASE("each public header compiles alone in C99 and C++17 with one layout") {
  CHECK(sizeof(kHeadersAlone) / sizeof(kHeadersAlone[0]) == 5);
  for (const HeaderAlone& row : kHeadersAlone) {
    INFO(row.header);
    CHECK(row.c() == row.here);
    CHECK(row.cpp() == row.here);
  }
}
