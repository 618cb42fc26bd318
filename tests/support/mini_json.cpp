#include "mini_json.hpp"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace switchyard::test {

const JsonValue& JsonValue::operator[](const std::string& key) const {
  if (kind != Kind::Object) throw std::runtime_error("JSON: '" + key + "' looked up in a non-object");
  for (const auto& member : members)
    if (member.first == key) return member.second;
  throw std::runtime_error("JSON: no member '" + key + "'");
}

const JsonValue& JsonValue::operator[](size_t index) const {
  if (kind != Kind::Array || index >= items.size())
    throw std::runtime_error("JSON: index " + std::to_string(index) + " out of range");
  return items[index];
}

bool JsonValue::has(const std::string& key) const {
  if (kind != Kind::Object) return false;
  for (const auto& member : members)
    if (member.first == key) return true;
  return false;
}

namespace {

class Reader {
 public:
  explicit Reader(const std::string& text) : text_(text) {}

  JsonValue document() {
    JsonValue value = parse_value();
    skip_blanks();
    if (pos_ != text_.size()) fail("trailing characters after the document");
    return value;
  }

 private:
  const std::string& text_;
  size_t pos_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(pos_) + ": '" +
                             text_.substr(pos_, 30) + "'");
  }
  void skip_blanks() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool consume(char c) {
    skip_blanks();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) == 0) {
      pos_ += w.size();
      return true;
    }
    return false;
  }

  JsonValue parse_value() {
    skip_blanks();
    if (pos_ >= text_.size()) fail("unexpected end");
    JsonValue value;
    const char c = text_[pos_];
    if (c == '{') {
      value.kind = JsonValue::Kind::Object;
      ++pos_;
      if (consume('}')) return value;
      do {
        skip_blanks();
        std::string key = parse_string();
        expect(':');
        value.members.emplace_back(std::move(key), parse_value());
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      value.kind = JsonValue::Kind::Array;
      ++pos_;
      if (consume(']')) return value;
      do value.items.push_back(parse_value());
      while (consume(','));
      expect(']');
    } else if (c == '"') {
      value.kind = JsonValue::Kind::String;
      value.text = parse_string();
    } else if (literal("true")) {
      value.kind = JsonValue::Kind::Bool;
      value.boolean = true;
    } else if (literal("false")) {
      value.kind = JsonValue::Kind::Bool;
    } else if (literal("null")) {
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      const size_t start = pos_;
      if (text_[pos_] == '-') ++pos_;
      while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) ||
                                     text_[pos_] == '.' || text_[pos_] == 'e' ||
                                     text_[pos_] == 'E' || text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      const std::string number = text_.substr(start, pos_ - start);
      char* end = nullptr;
      value.kind = JsonValue::Kind::Number;
      value.number = std::strtod(number.c_str(), &end);
      if (end != number.c_str() + number.size()) fail("bad number '" + number + "'");
    } else {
      fail("unexpected character");
    }
    return value;
  }

  std::string parse_string() {
    if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string");
    ++pos_;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      const unsigned char c = static_cast<unsigned char>(text_[pos_++]);
      if (c < 0x20) fail("unescaped control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (pos_ + 4 > text_.size()) fail("short \\u escape");
          const long code = std::strtol(text_.substr(pos_, 4).c_str(), nullptr, 16);
          pos_ += 4;
          out += code < 0x80 ? static_cast<char>(code) : '?';  // tests only need ASCII
          break;
        }
        default: fail("bad escape");
      }
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
};

}  // namespace

JsonValue parse_json(const std::string& document) { return Reader(document).document(); }

}  // namespace switchyard::test
