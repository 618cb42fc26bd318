// A minimal JSON reader for checking the CLI's --json output: it accepts exactly RFC 8259
// documents (throwing std::runtime_error with the offset otherwise) and gives a tree that
// tests can walk.
#ifndef SWITCHYARD_TESTS_MINI_JSON_HPP
#define SWITCHYARD_TESTS_MINI_JSON_HPP

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace switchyard::test {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  // Member of an object; throws when this is not an object or has no such key.
  const JsonValue& operator[](const std::string& key) const;
  // Item of an array; throws when out of range.
  const JsonValue& operator[](size_t index) const;
  bool has(const std::string& key) const;
  bool is_null() const { return kind == Kind::Null; }
};

JsonValue parse_json(const std::string& document);

}  // namespace switchyard::test

#endif
