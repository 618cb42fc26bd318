// ABI growth: the frozen v1.0 headers, the current SDK and the "future" v1.9 headers must
// agree on every field they share (same offset, same size), and each newer one may only
// append. Also pins the host's notion of the v1.0 struct sizes to the frozen headers.
#include "layout_probe.h"
#include "plugin_library.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <utility>

namespace {

using Layout = std::map<std::pair<std::string, std::string>, layout_field>;

Layout read(const layout_field* (*fields)(size_t*)) {
  size_t count = 0;
  const layout_field* rows = fields(&count);
  Layout layout;
  for (size_t i = 0; i < count; ++i) layout[{rows[i].type, rows[i].field}] = rows[i];
  return layout;
}

std::string row_name(const std::pair<std::string, std::string>& key) {
  return key.second.empty() ? "sizeof(" + key.first + ")" : key.first + "." + key.second;
}

// Every field of `older` is in `newer` at the same offset with the same size, and no struct
// shrank.
void check_prefix(const Layout& older, const char* older_name, const Layout& newer,
                  const char* newer_name) {
  for (const auto& [key, row] : older) {
    INFO(row_name(key) << ": " << older_name << " vs " << newer_name);
    const auto found = newer.find(key);
    REQUIRE_MESSAGE(found != newer.end(), row_name(key) << " disappeared in " << newer_name);
    if (key.second.empty()) {
      CHECK(found->second.size >= row.size);
    } else {
      CHECK(found->second.offset == row.offset);
      CHECK(found->second.size == row.size);
    }
  }
}

// Fields that `newer` has and `older` has not must start at or after the end of the older
// struct (appended, never inserted).
void check_appended_only(const Layout& older, const Layout& newer, const char* newer_name) {
  for (const auto& [key, row] : newer) {
    if (key.second.empty() || older.count(key) != 0) continue;
    const auto older_size = older.find({key.first, ""});
    if (older_size == older.end()) continue;  // a struct new in this minor
    INFO(row_name(key) << " in " << newer_name);
    CHECK(row.offset >= older_size->second.size);
  }
}

}  // namespace

TEST_CASE("each header set reports the ABI minor it was copied from") {
  CHECK(layout_v1_0_minor() == 0);
  CHECK(layout_current_minor() == SY_ABI_MINOR);
  CHECK(layout_v1_9_minor() == 9);
  CHECK(SY_ABI_MINOR >= 1);
  CHECK(SY_ABI_MINOR < 9);
}

TEST_CASE("v1.0 -> current -> v1.9: shared fields keep offset and size, growth only appends") {
  const Layout v1_0 = read(&layout_v1_0_fields);
  const Layout current = read(&layout_current_fields);
  const Layout v1_9 = read(&layout_v1_9_fields);
  REQUIRE(v1_0.size() > 100);  // the probe really lists the fields
  check_prefix(v1_0, "v1.0", current, "current");
  check_prefix(current, "current", v1_9, "v1.9");
  check_prefix(v1_0, "v1.0", v1_9, "v1.9");
  check_appended_only(v1_0, current, "current");
  check_appended_only(current, v1_9, "v1.9");
}

TEST_CASE("the structs that grew in 1.1 are larger than their v1.0 form, and 1.9 larger still") {
  const Layout v1_0 = read(&layout_v1_0_fields);
  const Layout current = read(&layout_current_fields);
  const Layout v1_9 = read(&layout_v1_9_fields);
  for (const char* type : {"sy_plugin", "sy_cross_entropy"}) {
    INFO(type);
    CHECK(current.at({type, ""}).size > v1_0.at({type, ""}).size);
    CHECK(v1_9.at({type, ""}).size > current.at({type, ""}).size);
  }
  CHECK(v1_9.at({"sy_norm", ""}).size > current.at({"sy_norm", ""}).size);
  CHECK(current.count({"sy_plugin", "build_info"}) == 1);
  CHECK(v1_0.count({"sy_plugin", "build_info"}) == 0);
  CHECK(v1_0.count({"sy_cross_entropy", "forward_collectives"}) == 0);
}

TEST_CASE("the loader's v1.0 minimum sizes are the frozen v1.0 struct sizes") {
  const Layout v1_0 = read(&layout_v1_0_fields);
  CHECK(switchyard::detail::kPluginV1_0Size == v1_0.at({"sy_plugin", ""}).size);
  CHECK(switchyard::detail::kCrossEntropyV1_0Size == v1_0.at({"sy_cross_entropy", ""}).size);
  CHECK(switchyard::detail::kNormV1_0Size == v1_0.at({"sy_norm", ""}).size);
}
