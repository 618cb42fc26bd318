#include "text.hpp"

namespace switchyard::tools::detail {

size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text)
    if ((c & 0xC0u) != 0x80u) ++width;  // not a UTF-8 continuation byte
  return width;
}

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return text;
}

}  // namespace switchyard::tools::detail
