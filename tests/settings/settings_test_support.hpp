// Helpers for the settings tests: temporary config files, resolving with a private
// environment (never the process's), and reading error messages and warnings.
#ifndef SWITCHYARD_TESTS_SETTINGS_SUPPORT_HPP
#define SWITCHYARD_TESTS_SETTINGS_SUPPORT_HPP

#include <switchyard/switchyard.hpp>

#include <spdlog/common.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace switchyard::test {

using Env = std::map<std::string, std::string>;

// A fresh folder under the system temp folder, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to <dir>/<name> and returns the full path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

// Options that read `env` instead of the process environment.
RuntimeOptions options_with(const Env& env, const std::vector<std::string>& args = {});
Settings resolve(const Env& env, const std::vector<std::string>& args = {});

// The message of the switchyard::Error that `action` throws; fails the test (and returns "")
// when it throws nothing or something else. Also checks the status.
std::string error_from(const std::function<void()>& action,
                       sy_status expected = SY_ERR_INVALID_ARGUMENT);

bool contains(const std::string& text, const std::string& part);
// The warnings that contain `part`.
std::vector<std::string> warnings_containing(const Settings& settings, const std::string& part);
std::string all_warnings(const Settings& settings);

// Restores the core logger's level on destruction (settings may change it).
class LogLevelGuard {
 public:
  LogLevelGuard();
  ~LogLevelGuard();

 private:
  spdlog::level::level_enum saved_;
};

}  // namespace switchyard::test

#endif
