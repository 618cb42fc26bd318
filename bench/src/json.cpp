#include "json.hpp"

#include <cmath>
#include <cstdio>

namespace switchyard::bench {
namespace {

void escape(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void newline(std::string& out, int indent, int depth) {
  if (indent <= 0) return;
  out += '\n';
  out.append(static_cast<size_t>(indent * depth), ' ');
}

}  // namespace

Json& Json::set(const std::string& key, Json value) {
  kind_ = Kind::Object;
  for (auto& member : members_)
    if (member.first == key) {
      member.second = std::move(value);
      return *this;
    }
  members_.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  kind_ = Kind::Array;
  items_.push_back(std::move(value));
  return *this;
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  if (indent > 0) out += '\n';
  return out;
}

void Json::dump_to(std::string& out, int indent, int depth) const {
  switch (kind_) {
    case Kind::Null: out += "null"; break;
    case Kind::Bool: out += b_ ? "true" : "false"; break;
    case Kind::Int: out += std::to_string(i_); break;
    case Kind::Double: {
      if (!std::isfinite(d_)) {
        out += "null";
        break;
      }
      char buffer[40];
      std::snprintf(buffer, sizeof buffer, "%.9g", d_);
      out += buffer;
      break;
    }
    case Kind::String: escape(out, s_); break;
    case Kind::Array: {
      // Arrays of scalars stay on one line: repetition times are read, not scrolled.
      bool scalars = true;
      for (const auto& item : items_)
        scalars = scalars && item.kind_ != Kind::Array && item.kind_ != Kind::Object;
      out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += scalars || indent <= 0 ? ", " : ",";
        if (!scalars) newline(out, indent, depth + 1);
        items_[i].dump_to(out, indent, depth + 1);
      }
      if (!scalars && !items_.empty()) newline(out, indent, depth);
      out += ']';
      break;
    }
    case Kind::Object: {
      out += '{';
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, depth + 1);
        escape(out, members_[i].first);
        out += indent > 0 ? ": " : ":";
        members_[i].second.dump_to(out, indent, depth + 1);
      }
      if (!members_.empty()) newline(out, indent, depth);
      out += '}';
      break;
    }
  }
}

}  // namespace switchyard::bench
