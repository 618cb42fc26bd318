#include "table.hpp"

#include <algorithm>
#include <cctype>
#include <ostream>

namespace switchyard::bench {
namespace {

bool numeric(const std::string& cell) {
  if (cell.empty()) return false;
  const unsigned char first = static_cast<unsigned char>(cell[0]);
  return std::isdigit(first) || ((first == '-' || first == '.') && cell.size() > 1);
}

}  // namespace

void Table::print(std::ostream& out) const {
  std::vector<size_t> width(headers_.size(), 0);
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());

  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string text;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      const bool right = !header && numeric(cell);
      text += right ? pad + cell : cell + (c + 1 < width.size() ? pad : "");
      if (c + 1 < width.size()) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  line(headers_, true);
  std::vector<std::string> rule;
  for (size_t w : width) rule.emplace_back(w, '-');
  line(rule, true);
  for (const auto& row : rows_) line(row, false);
}

}  // namespace switchyard::bench
