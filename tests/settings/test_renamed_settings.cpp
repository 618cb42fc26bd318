// Renamed variables and config keys keep working, with one deprecation warning per process.
// Each test uses its own renamed name: the "once" is process-wide.
#include "log.hpp"
#include "settings_test_support.hpp"

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <memory>
#include <sstream>

using namespace switchyard;
using namespace switchyard::test;

namespace {

// Captures what the core's logger writes while alive.
class CapturedLog {
 public:
  CapturedLog() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_)) {
    detail::logger().set_level(spdlog::level::warn);
    detail::logger().sinks().push_back(sink_);
  }
  ~CapturedLog() {
    auto& sinks = detail::logger().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::size_t count(const std::string& part) const {
    const std::string text = stream_.str();
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

}  // namespace

TEST_CASE("a renamed config key is read, and logged as deprecated exactly once") {
  LogLevelGuard restore_log_level;
  CapturedLog log;
  TempDir dir;
  const std::string config = dir.write("old.ini", "[loss]\nbackend = liger\n");
  for (int round = 0; round < 3; ++round) {
    const Settings s = resolve({{"SWITCHYARD_CONFIG", config}});
    CHECK(s.cross_entropy.value == "liger");
    CHECK(s.cross_entropy.origin == config + " [loss] backend");
    // Every resolution lists it (switchyard doctor shows it) ...
    CHECK(warnings_containing(s, "[loss] backend is deprecated; use [cross_entropy] backend")
              .size() == 1);
  }
  // ... but the log says it once.
  CHECK(log.count("[loss] backend is deprecated") == 1);
}

TEST_CASE("a renamed key next to its new name is ignored") {
  TempDir dir;
  const std::string config =
      dir.write("both.ini", "[normalization]\nkind = LayerNorm\n[norm]\nkind = L2Norm\n");
  const Settings s = resolve({{"SWITCHYARD_CONFIG", config}});
  CHECK(s.norm_kind.value == "L2Norm");
  CHECK(warnings_containing(s, "It is ignored because [norm] kind is also set").size() == 1);
}

TEST_CASE("a renamed variable is read, and logged as deprecated exactly once") {
  LogLevelGuard restore_log_level;
  CapturedLog log;
  for (int round = 0; round < 2; ++round) {
    const Settings s = resolve({{"SWITCHYARD_LOSS", "te"}});
    CHECK(s.cross_entropy.value == "te");
    CHECK(s.cross_entropy.origin == "SWITCHYARD_LOSS");
    const auto notes =
        warnings_containing(s, "SWITCHYARD_LOSS is deprecated; use SWITCHYARD_CROSS_ENTROPY");
    CHECK(notes.size() == 1);
    CHECK(warnings_containing(s, "not a Switchyard variable").empty());
  }
  CHECK(log.count("SWITCHYARD_LOSS is deprecated") == 1);
}

TEST_CASE("a renamed variable next to its new name is ignored") {
  const Settings s =
      resolve({{"SWITCHYARD_PLUGIN_DIR", "/old"}, {"SWITCHYARD_PLUGIN_PATH", "/new"}});
  REQUIRE(s.plugin_path.size() == 1);
  CHECK(s.plugin_path[0].value == "/new");
  CHECK(warnings_containing(s, "SWITCHYARD_PLUGIN_DIR is deprecated").size() == 1);
  CHECK(warnings_containing(s, "ignored because SWITCHYARD_PLUGIN_PATH is also set").size() == 1);
}

TEST_CASE("deprecated backend names are kept as requested (the runtime maps them)") {
  const Settings s = resolve({{"SWITCHYARD_NORM", "fused_layer_norm"}});
  CHECK(s.norm.value == "fused_layer_norm");
  CHECK(s.warnings.empty());
}
