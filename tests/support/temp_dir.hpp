// A fresh folder under the system temp folder for one test, removed with everything in it.
#ifndef SWITCHYARD_TESTS_TEMP_DIR_HPP
#define SWITCHYARD_TESTS_TEMP_DIR_HPP

#include <string>

namespace switchyard::test {

class TempDir {
 public:
  TempDir();  // throws std::runtime_error when no folder can be made
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The whole file as bytes (what a test or a child wrote); throws std::runtime_error when it
// cannot be read.
std::string read_text(const std::string& path);

}  // namespace switchyard::test

#endif
