// The JSON reader the CLI tests rely on must itself reject what is not JSON, or the --json
// checks would prove nothing.
#include "mini_json.hpp"

#include <doctest/doctest.h>

using switchyard::test::parse_json;

TEST_CASE("mini_json reads nested documents and rejects malformed ones") {
  const auto value = parse_json(R"({"a": [1, 2.5, "x\n"], "b": {"c": null, "d": true}})");
  CHECK(value["a"][1].number == doctest::Approx(2.5));
  CHECK(value["a"][2].text == "x\n");
  CHECK(value["b"]["c"].is_null());
  CHECK(value["b"]["d"].boolean);
  CHECK_THROWS(parse_json(R"({"a": 1,})"));
  CHECK_THROWS(parse_json(R"({"a": 1} x)"));
  CHECK_THROWS(parse_json("{\"a\": \"line\nbreak\"}"));
  CHECK_THROWS(parse_json(R"([1 2])"));
  CHECK_THROWS(value["missing"]);
}
