// A text table for people: columns aligned to the widest cell, numbers right-aligned.
#ifndef SWITCHYARD_BENCH_TABLE_HPP
#define SWITCHYARD_BENCH_TABLE_HPP

#include <iosfwd>
#include <string>
#include <vector>

namespace switchyard::bench {

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace switchyard::bench

#endif
