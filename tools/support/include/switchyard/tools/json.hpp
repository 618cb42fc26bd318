// A small JSON value for the tools' output: null, bool, number, string, array, object. Objects
// keep insertion order; a number that is not finite is written as null (JSON has no NaN).
#ifndef SWITCHYARD_TOOLS_JSON_HPP
#define SWITCHYARD_TOOLS_JSON_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::tools {

class Json {
 public:
  // How dump() lays a document out.
  struct Format {
    int indent = 2;                     // blanks per level; 0 or less: all on one line
    int significant_digits = 17;        // of a double: 17 round-trips it, 9 a float
    bool scalar_arrays_inline = false;  // arrays of scalars on one line even when indented
  };

  Json();  // null
  Json(bool b);
  Json(int v);
  Json(int64_t v);
  Json(double v);
  Json(const char* s);  // null when s is null
  Json(std::string s);
  static Json array();
  static Json object();
  template <class T>
  static Json array_of(const std::vector<T>& values) {
    Json json = array();
    for (const auto& value : values) json.push(Json(value));
    return json;
  }

  // set() makes a null an object and push() a null an array; either on any other kind is a
  // programming error (std::logic_error).
  Json& set(const std::string& key, Json value);  // replaces an existing key in place
  Json& push(Json value);

  // No final line break. dump(indent) is dump(Format) with that indent and the defaults.
  std::string dump(int indent = 2) const;
  std::string dump(const Format& format) const;

 private:
  enum class Kind { Null, Bool, Int, Double, String, Array, Object } kind_ = Kind::Null;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
  bool is_scalar() const { return kind_ != Kind::Array && kind_ != Kind::Object; }
  void dump_to(std::string& out, const Format& format, int depth) const;
};

}  // namespace switchyard::tools

#endif
