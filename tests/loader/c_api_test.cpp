// The C host API: scenarios written in C99 (c_api_calls.c) checked here.
#include "c_api_calls.h"
#include "loader_support.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <string>

using loader_test::fixture;

namespace {

// The C API reads the process environment: keep the real plugin folder out of these tests.
struct IsolatedEnvironment {
  IsolatedEnvironment() {
    setenv("SWITCHYARD_PLUGIN_SYSTEM_PATH", fixture("empty").c_str(), 1);
    for (const char* name : {"SWITCHYARD_PLUGIN_PATH", "SWITCHYARD_CROSS_ENTROPY",
                             "SWITCHYARD_NORM", "SWITCHYARD_CONFIG", "SWITCHYARD_DETERMINISTIC",
                             "SWITCHYARD_DISABLE"})
      unsetenv(name);
  }
};

}  // namespace

TEST_CASE("C99: runtime -> cross entropy -> forward, with options and argv") {
  const IsolatedEnvironment environment;
  char note[2048] = {};
  const std::string path = fixture("faults") + ":" + fixture("cpu_echo");
  CHECK_MESSAGE(c_api_ce_round_trip(path.c_str(), note, sizeof note) == 0, note);
}

TEST_CASE("C99: runtime -> norm -> forward") {
  const IsolatedEnvironment environment;
  char note[2048] = {};
  CHECK_MESSAGE(c_api_norm_round_trip(fixture("cpu_echo").c_str(), note, sizeof note) == 0, note);
}

TEST_CASE("C99: a missing backend fails at creation with the selection error, cut to fit") {
  const IsolatedEnvironment environment;
  char message[SY_ERROR_MESSAGE_BYTES + 16] = {};
  int was_null = 0;
  const std::string path = fixture("faults") + ":" + fixture("cpu_echo");
  const sy_status status = c_api_missing_backend(path.c_str(), message, sizeof message, &was_null);
  const std::string text = message;
  INFO(text);
  CHECK(status == SY_ERR_UNAVAILABLE);
  CHECK(was_null == 1);
  CHECK(text.find("not_installed (API: RuntimeOptions::cross_entropy)") != std::string::npos);
  CHECK(text.find(fixture("faults")) != std::string::npos);
  // The full text is longer than sy_error's buffer: it is cut and says so.
  CHECK(text.size() == SY_ERROR_MESSAGE_BYTES - 1);
  CHECK(text.substr(text.size() - 15) == "... (truncated)");
}

TEST_CASE("C99: bad options are refused with a sentence naming the field") {
  const IsolatedEnvironment environment;
  char message[SY_ERROR_MESSAGE_BYTES] = {};
  CHECK(c_api_bad_options(0, message, sizeof message) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(message).find("sy_runtime_options.struct_size is 0") != std::string::npos);
  CHECK(c_api_bad_options(1, message, sizeof message) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(message) ==
        "sy_runtime_options.deterministic is 5, expected -1 (not set), 0 or 1");
  CHECK(c_api_bad_options(2, message, sizeof message) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(message).find("sy_runtime_options.argv[1] is NULL") != std::string::npos);
}

TEST_CASE("C99: NULL handles are refused, never dereferenced") {
  char message[SY_ERROR_MESSAGE_BYTES] = {};
  CHECK(c_api_null_handles(message, sizeof message) == SY_ERR_INVALID_ARGUMENT);
  CHECK(std::string(message) == "sy_ce_forward: op is NULL");
}

TEST_CASE("C99: thread group handles") {
  char note[512] = {};
  CHECK_MESSAGE(c_api_thread_group(note, sizeof note) == 0, note);
}

TEST_CASE("C API names") {
  CHECK(std::string(sy_version()) == switchyard::version());
  CHECK(std::string(sy_status_name(SY_ERR_UNSUPPORTED)) == "SY_ERR_UNSUPPORTED");
}
