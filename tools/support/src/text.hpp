// Text measures shared by the table and the progress line.
#ifndef SWITCHYARD_TOOLS_TEXT_HPP
#define SWITCHYARD_TOOLS_TEXT_HPP

#include <cstddef>
#include <string>

namespace switchyard::tools::detail {

// Width on a terminal, counting UTF-8 code points rather than bytes (close enough for the
// names, paths and numbers the tools show).
size_t display_width(const std::string& text);

// `text` on one line: line breaks and tabs become blanks.
std::string one_line(std::string text);

}  // namespace switchyard::tools::detail

#endif
