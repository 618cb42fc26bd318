// Spelling suggestions.
#include "did_you_mean.hpp"

#include <doctest/doctest.h>

using switchyard::detail::closest_match;
using switchyard::detail::did_you_mean;

namespace {
const std::vector<std::string> kBackends{"native", "fused", "apex", "liger", "te"};
}

TEST_CASE("typos within the threshold are matched") {
  CHECK(closest_match("nativ", kBackends) == "native");
  CHECK(closest_match("lgier", kBackends) == "liger");  // transposition: one edit
  CHECK(closest_match("fsued", kBackends) == "fused");
  CHECK(closest_match("tx", kBackends) == "te");
  CHECK(closest_match("APEX", kBackends) == "apex");  // case-insensitive
  CHECK(closest_match("CROSS_ENTROPHY", {"NORM", "CROSS_ENTROPY", "CONFIG"}) == "CROSS_ENTROPY");
}

TEST_CASE("far words are not matched") {
  CHECK(closest_match("xx", kBackends) == "");
  CHECK(closest_match("cudnn", kBackends) == "");
  CHECK(closest_match("", kBackends) == "");
  CHECK(closest_match("native", {}) == "");
  CHECK(closest_match("BANANA", {"NORM", "CONFIG", "DISABLE"}) == "");
}

TEST_CASE("the threshold grows with the length of the word") {
  // Two edits: too many for a 5-letter word, fine for a 9-letter one.
  CHECK(closest_match("ligxx", {"liger"}) == "");
  CHECK(closest_match("LayerNxrx", {"LayerNorm"}) == "LayerNorm");
  CHECK(closest_match("LaxxxNorm", {"LayerNorm"}) == "LayerNorm");
  CHECK(closest_match("LaxxxNxrm", {"LayerNorm"}) == "");
}

TEST_CASE("the closest candidate wins; ties go to the first") {
  CHECK(closest_match("fuse", {"fused", "fuser2"}) == "fused");
  CHECK(closest_match("ab", {"ax", "xb"}) == "ax");
}

TEST_CASE("a truncated name of three letters or more is matched by prefix") {
  CHECK(closest_match("RMS", {"LayerNorm", "RMSNorm", "L2Norm"}) == "RMSNorm");
  CHECK(closest_match("transformer", {"local", "transformer_engine"}) == "transformer_engine");
  CHECK(closest_match("tr", {"local", "transformer_engine"}) == "");
}

TEST_CASE("did_you_mean formats the suggestion") {
  CHECK(did_you_mean("nativ", kBackends) == " (did you mean 'native'?)");
  CHECK(did_you_mean("zzzz", kBackends) == "");
}
