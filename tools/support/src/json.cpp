#include <switchyard/tools/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace switchyard::tools {

Json::Json() = default;
Json::Json(bool b) : kind_(Kind::Bool), b_(b) {}
Json::Json(int v) : kind_(Kind::Int), i_(v) {}
Json::Json(int64_t v) : kind_(Kind::Int), i_(v) {}
Json::Json(double v) : kind_(Kind::Double), d_(v) {}
Json::Json(const char* s) : kind_(s ? Kind::String : Kind::Null), s_(s ? s : "") {}
Json::Json(std::string s) : kind_(Kind::String), s_(std::move(s)) {}

Json Json::array() {
  Json json;
  json.kind_ = Kind::Array;
  return json;
}

Json Json::object() {
  Json json;
  json.kind_ = Kind::Object;
  return json;
}

Json& Json::set(const std::string& key, Json value) {
  if (kind_ == Kind::Null) kind_ = Kind::Object;
  if (kind_ != Kind::Object) throw std::logic_error("Json::set('" + key + "') on a non-object");
  for (auto& member : members_) {
    if (member.first == key) {
      member.second = std::move(value);
      return *this;
    }
  }
  members_.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  if (kind_ == Kind::Null) kind_ = Kind::Array;
  if (kind_ != Kind::Array) throw std::logic_error("Json::push on a non-array");
  items_.push_back(std::move(value));
  return *this;
}

namespace {

void append_quoted(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void append_newline(std::string& out, int indent, int depth) {
  if (indent <= 0) return;
  out += '\n';
  out.append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
}

void append_number(std::string& out, double value, int significant_digits) {
  if (!std::isfinite(value)) {  // JSON has no NaN or infinity
    out += "null";
    return;
  }
  char number[64];
  std::snprintf(number, sizeof number, "%.*g", significant_digits, value);
  out += number;
}

}  // namespace

void Json::dump_to(std::string& out, const Format& format, int depth) const {
  const int indent = format.indent;
  switch (kind_) {
    case Kind::Null: out += "null"; break;
    case Kind::Bool: out += b_ ? "true" : "false"; break;
    case Kind::Int: out += std::to_string(i_); break;
    case Kind::Double: append_number(out, d_, format.significant_digits); break;
    case Kind::String: append_quoted(out, s_); break;
    case Kind::Array: {
      if (items_.empty()) {
        out += "[]";
        break;
      }
      const bool one_line =
          indent <= 0 || (format.scalar_arrays_inline &&
                          std::all_of(items_.begin(), items_.end(),
                                      [](const Json& item) { return item.is_scalar(); }));
      out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += one_line ? ", " : ",";
        if (!one_line) append_newline(out, indent, depth + 1);
        items_[i].dump_to(out, format, depth + 1);
      }
      if (!one_line) append_newline(out, indent, depth);
      out += ']';
      break;
    }
    case Kind::Object: {
      if (members_.empty()) {
        out += "{}";
        break;
      }
      out += '{';
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out += indent > 0 ? "," : ", ";
        append_newline(out, indent, depth + 1);
        append_quoted(out, members_[i].first);
        out += ": ";
        members_[i].second.dump_to(out, format, depth + 1);
      }
      append_newline(out, indent, depth);
      out += '}';
      break;
    }
  }
}

std::string Json::dump(int indent) const {
  Format format;
  format.indent = indent;
  return dump(format);
}

std::string Json::dump(const Format& format) const {
  std::string out;
  dump_to(out, format, 0);
  return out;
}

}  // namespace switchyard::tools
