// `switchyard select`: what each family resolves to with this command line, environment and
// config file, and why — the same resolution a trainer gets from Runtime::select.
#include "commands.hpp"
#include "describe.hpp"
#include "output.hpp"

#include <iostream>
#include <optional>

namespace po = boost::program_options;

namespace switchyard::cli {

namespace {

std::optional<Family> parse_family(const std::string& text) {
  if (text == "cross_entropy" || text == "cross-entropy" || text == "ce") return Family::CrossEntropy;
  if (text == "norm") return Family::Norm;
  return std::nullopt;
}

const FamilyInfo& family_info(const PluginInfo& plugin, Family family) {
  return family == Family::CrossEntropy ? plugin.cross_entropy : plugin.norm;
}

Json selection_json(const Selection& selection, const Settings& settings) {
  const FamilyInfo& info = family_info(selection.plugin, selection.family);
  Json notes = Json::array();
  for (const auto& note : selection.notes) notes.push(note);
  Json json = Json::object();
  json.set("requested", setting_json(selection.requested))
      .set("resolved", selection.resolved_name)
      .set("path", selection.plugin.path)
      .set("version", selection.plugin.version)
      .set("vendor", selection.plugin.vendor)
      .set("state", plugin_state_name(selection.plugin.state))
      .set("determinism", determinism_name(info.determinism))
      .set("capabilities", family_json(selection.family, info));
  if (selection.family == Family::Norm) json.set("norm_kind", setting_json(settings.norm_kind));
  json.set("notes", std::move(notes));
  return json;
}

void print_selection(std::ostream& out, const Selection& selection, const Settings& settings) {
  const FamilyInfo& info = family_info(selection.plugin, selection.family);
  std::vector<std::pair<std::string, std::string>> fields = {
      {"requested", selection.requested.describe()},
      {"resolved", selection.resolved_name},
      {"file", selection.plugin.path},
      {"version", selection.plugin.version.empty() ? "not stated" : selection.plugin.version},
      {"determinism", determinism_name(info.determinism)},
      {"devices", join(device_names(info.devices))},
      {"dtypes", join(dtype_names(info.dtypes))},
  };
  if (!selection.requested.fallback.empty())
    fields.emplace_back("fallback", selection.requested.fallback);
  if (selection.family == Family::Norm) fields.emplace_back("norm kind", settings.norm_kind.describe());
  for (const auto& note : selection.notes) fields.emplace_back("note", note);
  out << family_name(selection.family) << '\n';
  print_fields(out, fields, "  ");
}

}  // namespace

int cmd_select(const Args& args) {
  po::options_description own("select options");
  own.add_options()("family", po::value<std::string>(),
                    "only this family: cross_entropy or norm (default: both)");
  po::variables_map vm;
  RuntimeOptions options;
  if (!parse_command_line("select", args, own, vm, options)) return 2;
  if (vm.count("help")) {
    std::cout << "Resolves each family the way a trainer's Runtime would, from the flags given\n"
                 "here, the environment, the config file and the defaults, and shows what was\n"
                 "requested and where that came from, the backend it resolves to, its file,\n"
                 "version and determinism, and any deprecation or fallback. Exit status 1 when\n"
                 "a family cannot be served; the runtime's full error goes to stderr.\n\n"
                 "example: switchyard select --cross-entropy-loss-fusion "
                 "--cross-entropy-fusion-impl te\n\n";
    print_command_help(std::cout, "select", "[options]", own);
    return 0;
  }
  std::vector<Family> families = {Family::CrossEntropy, Family::Norm};
  if (vm.count("family")) {
    const std::string requested = vm["family"].as<std::string>();
    const auto family = parse_family(requested);
    if (!family)
      return report_error("select", "--family '" + requested +
                                        "' is not a family; expected cross_entropy or norm" +
                                        did_you_mean(requested, {"cross_entropy", "norm"}),
                          2);
    families = {*family};
  }

  const Runtime runtime(options);
  const Settings& settings = runtime.settings();
  const bool json_output = vm.count("json") > 0;
  Json json = Json::object();
  int exit_code = 0;
  bool first = true;
  for (Family family : families) {
    std::optional<Selection> selection;
    std::string error;
    try {
      selection = runtime.select(family);
    } catch (const Error& e) {
      error = std::string(e.what()) + " [" + status_name(e.status()) + "]";
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!selection) {
      exit_code = 1;
      report_error("select", std::string("cannot select a ") + family_name(family) +
                                 " backend:\n" + error);
      if (json_output) {
        Json failure = Json::object();
        failure.set("requested", setting_json(family == Family::CrossEntropy ? settings.cross_entropy
                                                                            : settings.norm))
            .set("error", error);
        json.set(family_name(family), std::move(failure));
      }
      continue;
    }
    if (json_output) {
      json.set(family_name(family), selection_json(*selection, settings));
    } else {
      if (!first) std::cout << '\n';
      print_selection(std::cout, *selection, settings);
    }
    first = false;
  }
  if (json_output) {
    Json warnings = Json::array();
    for (const auto& warning : settings.warnings) warnings.push(warning);
    json.set("deterministic", setting_json(settings.deterministic)).set("warnings", std::move(warnings));
    std::cout << json.dump() << '\n';
  } else if (!settings.warnings.empty()) {
    std::cout << '\n';
    for (const auto& warning : settings.warnings) std::cout << "warning: " << warning << '\n';
  }
  return exit_code;
}

}  // namespace switchyard::cli
