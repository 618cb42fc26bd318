// `switchyard list`: every location with every candidate, loaded in child processes.
#include "cli_runner.hpp"
#include "mini_json.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace switchyard::test;

namespace {

std::map<std::string, std::string> three_fixtures() {
  return {{"SWITCHYARD_PLUGIN_PATH", fixture_folder("cli_ok") + ":" + fixture_folder("cli_crash") +
                                         ":" + fixture_folder("cli_unavailable")}};
}

// The row of `name` in any table of the output.
std::map<std::string, std::string> row_of(const std::string& out, const std::string& name) {
  for (const auto& table : tables_in(out, "NAME"))
    for (const auto& row : table.rows)
      if (row.at("NAME") == name) return row;
  FAIL("no row for " << name << " in:\n" << out);
  return {};
}

}  // namespace

TEST_CASE("list survives a plugin that crashes while loading and reports it as crashed") {
  const auto result = run_cli({"list"}, three_fixtures());
  REQUIRE_MESSAGE(result.signal == 0, result.err);
  CHECK(result.exit_code == 0);

  const auto crash = row_of(result.out, "cli_crash");
  CHECK(crash.at("STATE") == "crashed");
  CHECK(crash.at("FAMILIES") == "-");
  CHECK(!crash.at("REASON").empty());

  const auto ok = row_of(result.out, "cli_ok");
  CHECK(ok.at("STATE") == "ok");
  CHECK(ok.at("VERSION") == "1.2.3");
  CHECK(ok.at("FAMILIES") == "cross_entropy,norm");
  CHECK(ok.at("DEVICES") == "cpu");
  CHECK(ok.at("DETERMINISM") == "cross_entropy:deterministic norm:nondeterministic");
  CHECK(ok.at("REASON").empty());

  const auto unavailable = row_of(result.out, "cli_unavailable");
  CHECK(unavailable.at("STATE") == "unavailable");
  CHECK(unavailable.at("FAMILIES") == "norm");
  CHECK(unavailable.at("DEVICES") == "cuda");
  CHECK(unavailable.at("DETERMINISM") == "deterministic");
  CHECK(unavailable.at("REASON").find("no fixture device on this machine") != std::string::npos);

  // Every location is named with the setting that put it on the search path, in order.
  const auto ok_at = result.out.find(fixture_folder("cli_ok") + "  (environment: SWITCHYARD_PLUGIN_PATH");
  const auto crash_at = result.out.find(fixture_folder("cli_crash") + "  (environment");
  CHECK(ok_at != std::string::npos);
  CHECK(crash_at != std::string::npos);
  CHECK(ok_at < crash_at);
  CHECK(result.out.find("3 plugins: 1 crashed, 1 ok, 1 unavailable") != std::string::npos);
}

TEST_CASE("list columns are aligned under their headers in every row") {
  // Names of different lengths make misalignment visible; tables_in() throws when a cell
  // does not start at its header's offset.
  const auto result = run_cli({"list"}, three_fixtures());
  REQUIRE(result.exit_code == 0);
  std::vector<ParsedTable> tables;
  CHECK_NOTHROW(tables = tables_in(result.out, "NAME"));
  REQUIRE(tables.size() == 3);
  for (const auto& table : tables) {
    CHECK(table.headers == std::vector<std::string>{"NAME", "VERSION", "STATE", "FAMILIES",
                                                     "DEVICES", "DETERMINISM", "REASON"});
    CHECK(table.rows.size() == 1);
  }
  // Two plugins in one folder: one table, two aligned rows.
  TempDir folder;
  for (const char* name : {"cli_ok", "cli_unavailable"})
    std::filesystem::copy_file(fixture_file(name), folder / ("libswitchyard-" + std::string(name) + ".so"));
  const auto shared = run_cli({"list"}, {{"SWITCHYARD_PLUGIN_PATH", folder.path()}});
  REQUIRE(shared.exit_code == 0);
  std::vector<ParsedTable> shared_tables;
  CHECK_NOTHROW(shared_tables = tables_in(shared.out, "NAME"));
  REQUIRE(shared_tables.size() == 1);
  REQUIRE(shared_tables[0].rows.size() == 2);
  CHECK(shared_tables[0].rows[0].at("NAME") == "cli_ok");  // name order
  CHECK(shared_tables[0].rows[1].at("NAME") == "cli_unavailable");
  CHECK(shared_tables[0].rows[1].at("VERSION") == "0.0.1");
}

TEST_CASE("list --json gives every location and candidate with state, families and reason") {
  const auto result = run_cli({"list", "--json"}, three_fixtures());
  REQUIRE(result.exit_code == 0);
  JsonValue json;
  REQUIRE_NOTHROW(json = parse_json(result.out));
  const auto& path = json["search_path"];
  REQUIRE(path.items.size() >= 3);
  CHECK(path[0]["path"].text == fixture_folder("cli_ok"));
  CHECK(path[0]["origin"]["source"].text == "environment");
  CHECK(path[0]["exists"].boolean);
  const auto& ok = path[0]["candidates"][0];
  CHECK(ok["name"].text == "cli_ok");
  CHECK(ok["state"].text == "ok");
  CHECK(ok["path"].text == fixture_file("cli_ok"));
  CHECK(ok["families"]["cross_entropy"]["determinism"].text == "deterministic");
  CHECK(ok["families"]["cross_entropy"]["features"][0].text == "ignore_index");
  CHECK(ok["families"]["norm"]["devices"][0].text == "cpu");
  const auto& crash = path[1]["candidates"][0];
  CHECK(crash["state"].text == "crashed");
  CHECK(crash["path"].text == fixture_file("cli_crash"));
  CHECK(crash["families"]["cross_entropy"].is_null());
  CHECK(path[2]["candidates"][0]["families"]["cross_entropy"].is_null());
  CHECK(json["summary"]["plugins"].number == 3);
  CHECK(json["summary"]["crashed"].number == 1);
}

TEST_CASE("list shows missing folders, empty folders, files, disabled and unloadable plugins") {
  TempDir empty, junk;
  std::ofstream(junk / "libswitchyard-junk.so") << "not an ELF file";
  const auto result = run_cli(
      {"list"},
      {{"SWITCHYARD_PLUGIN_PATH", empty.path() + ":/nonexistent/sy-plugins:" + junk.path() + ":" +
                                      fixture_folder("cli_unavailable") + ":" +
                                      fixture_file("cli_ok")},
       {"SWITCHYARD_DISABLE", "cli_unav*"}});
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("/nonexistent/sy-plugins  (environment: SWITCHYARD_PLUGIN_PATH") !=
        std::string::npos);
  CHECK(result.out.find("  does not exist") != std::string::npos);
  CHECK(result.out.find("  no plugins") != std::string::npos);
  CHECK(row_of(result.out, "cli_unavailable").at("STATE") == "disabled");
  // A file on the path is a location of its own.
  CHECK(result.out.find("\n" + fixture_file("cli_ok") + "  (environment: SWITCHYARD_PLUGIN_PATH)") !=
        std::string::npos);
  CHECK(row_of(result.out, "cli_ok").at("STATE") == "ok");
  const auto junk_row = row_of(result.out, "junk");
  CHECK(junk_row.at("STATE") == "rejected");
  CHECK(!junk_row.at("REASON").empty());
}

TEST_CASE("list --names-only opens no plugin, so even the crashing one is just a name") {
  const auto result = run_cli({"list", "--names-only"}, three_fixtures());
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("plugins were not loaded") != std::string::npos);
  const auto tables = tables_in(result.out, "NAME");
  REQUIRE(tables.size() == 3);
  CHECK(tables[1].rows.at(0).at("NAME") == "cli_crash");
  CHECK(tables[1].rows.at(0).at("FILE") == fixture_file("cli_crash"));
  CHECK(result.out.find("crashed") == std::string::npos);
}
