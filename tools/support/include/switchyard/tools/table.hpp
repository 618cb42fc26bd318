// A text table for people: columns aligned to the widest cell, the header row underlined with
// dashes, two blanks between columns and none at the end of a line.
#ifndef SWITCHYARD_TOOLS_TABLE_HPP
#define SWITCHYARD_TOOLS_TABLE_HPP

#include <iosfwd>
#include <string>
#include <vector>

namespace switchyard::tools {

class Table {
 public:
  // Where a body cell that reads as a number ("12", "-3.5", ".5") sits in its column. Headers,
  // the rule and every other cell are left-aligned.
  enum class Numbers { left, right };

  explicit Table(std::vector<std::string> headers, Numbers numbers = Numbers::left);

  // A row with fewer cells than headers is padded with empty ones, extra cells are dropped;
  // line breaks and tabs in a cell become blanks (they would break the alignment).
  void add(std::vector<std::string> row);
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  Numbers numbers_;
};

}  // namespace switchyard::tools

#endif
