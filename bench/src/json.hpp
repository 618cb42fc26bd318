// A small JSON value for the benchmark's output file: objects keep insertion order, numbers
// that are not finite are written as null (JSON has no NaN).
#ifndef SWITCHYARD_BENCH_JSON_HPP
#define SWITCHYARD_BENCH_JSON_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::bench {

class Json {
 public:
  Json() = default;  // null
  Json(bool b) : kind_(Kind::Bool), b_(b) {}
  Json(int v) : kind_(Kind::Int), i_(v) {}
  Json(int64_t v) : kind_(Kind::Int), i_(v) {}
  Json(double v) : kind_(Kind::Double), d_(v) {}
  Json(const char* s) : kind_(Kind::String), s_(s) {}
  Json(std::string s) : kind_(Kind::String), s_(std::move(s)) {}
  static Json array() { Json j; j.kind_ = Kind::Array; return j; }
  static Json object() { Json j; j.kind_ = Kind::Object; return j; }
  template <class T>
  static Json array_of(const std::vector<T>& values) {
    Json j = array();
    for (const auto& v : values) j.push(Json(v));
    return j;
  }

  Json& set(const std::string& key, Json value);  // objects
  Json& push(Json value);                         // arrays
  std::string dump(int indent = 2) const;

 private:
  enum class Kind { Null, Bool, Int, Double, String, Array, Object } kind_ = Kind::Null;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
  void dump_to(std::string& out, int indent, int depth) const;
};

}  // namespace switchyard::bench

#endif
