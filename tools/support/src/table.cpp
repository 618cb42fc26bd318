#include <switchyard/tools/table.hpp>

#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <ostream>

namespace switchyard::tools {
namespace {

// "12", "-3.5", ".5", "1e-3": what a reader compares by magnitude. "-" alone is a dash.
bool reads_as_number(const std::string& cell) {
  if (cell.empty()) return false;
  const unsigned char first = static_cast<unsigned char>(cell[0]);
  return std::isdigit(first) || ((first == '-' || first == '.') && cell.size() > 1);
}

}  // namespace

Table::Table(std::vector<std::string> headers, Numbers numbers)
    : headers_(std::move(headers)), numbers_(numbers) {
  for (auto& header : headers_) header = detail::one_line(std::move(header));
}

void Table::add(std::vector<std::string> row) {
  row.resize(headers_.size());
  for (auto& cell : row) cell = detail::one_line(std::move(cell));
  rows_.push_back(std::move(row));
}

void Table::print(std::ostream& out) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = detail::display_width(headers_[c]);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], detail::display_width(row[c]));
  }
  auto print_row = [&](const std::vector<std::string>& cells, bool body) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const std::string pad(widths[c] - detail::display_width(cells[c]), ' ');
      if (body && numbers_ == Numbers::right && reads_as_number(cells[c]))
        line += pad + cells[c];
      else
        line += last ? cells[c] : cells[c] + pad;
      if (!last) line += "  ";
    }
    // No trailing blanks when the last cells are empty.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  };
  print_row(headers_, false);
  std::vector<std::string> rule;
  for (size_t width : widths) rule.emplace_back(width, '-');
  print_row(rule, false);
  for (const auto& row : rows_) print_row(row, true);
}

}  // namespace switchyard::tools
