#include "settings_test_support.hpp"

#include "log.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>

namespace switchyard::test {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("switchyard-settings-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  const std::filesystem::path file = path_ / name;
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file);
  out << text;
  return file.string();
}

RuntimeOptions options_with(const Env& env, const std::vector<std::string>& args) {
  RuntimeOptions options;
  options.environment = env;
  options.args = args;
  return options;
}

Settings resolve(const Env& env, const std::vector<std::string>& args) {
  return resolve_settings(options_with(env, args));
}

std::string error_from(const std::function<void()>& action, sy_status expected) {
  try {
    action();
  } catch (const Error& e) {
    CHECK_MESSAGE(e.status() == expected, "status was ", status_name(e.status()));
    return e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("threw a non-switchyard exception: ", e.what());
    return {};
  }
  FAIL_CHECK("no exception was thrown");
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> warnings_containing(const Settings& settings, const std::string& part) {
  std::vector<std::string> found;
  for (const std::string& warning : settings.warnings) {
    if (contains(warning, part)) found.push_back(warning);
  }
  return found;
}

std::string all_warnings(const Settings& settings) {
  std::string text;
  for (const std::string& warning : settings.warnings) text += warning + "\n";
  return text;
}

LogLevelGuard::LogLevelGuard() : saved_(detail::logger().level()) {}
LogLevelGuard::~LogLevelGuard() { detail::logger().set_level(saved_); }

}  // namespace switchyard::test
