// Reads Switchyard's and Megatron's selection flags from a trainer's argument list.
#include "command_line.hpp"

#include "megatron_flags.hpp"
#include "plugin_options.hpp"
#include "setting_values.hpp"

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>

namespace switchyard {

const std::vector<FlagSpec>& selection_flags() {
  static const std::vector<FlagSpec> flags{
      {"cross-entropy", true,
       "cross entropy backend: a name (native, fused, liger, te) or a .so path"},
      {"norm", true,
       "normalization backend: a name (native, fused, apex, liger, te) or a .so path"},
      {"norm-kind", true, "normalization kind: LayerNorm, RMSNorm or L2Norm"},
      {"plugin-path", true, "folder or .so searched first (repeatable; ':' separates several)"},
      {"config", true, "Switchyard config file (INI)"},
      {"deterministic", false, "refuse nondeterministic backends, warn on unknown ones"},
      {"plugin-option", true,
       "plugin option <plugin>.<key>=<value>, '*' for every plugin (repeatable)"},
      {"log-level", true, "trace, debug, info, warn, error or off"},
      // Megatron-LM's flags, with Megatron's meaning.
      {"cross-entropy-loss-fusion", false, "Megatron: use the fused cross entropy"},
      {"cross-entropy-fusion-impl", true,
       "Megatron: fused implementation: native, te, liger or a plugin"},
      {"transformer-impl", true,
       "Megatron: local (norms: apex, else native) or transformer_engine (te)"},
      {"normalization", true, "Megatron: LayerNorm, RMSNorm or L2Norm (same as --norm-kind)"},
      {"deterministic-mode", false, "Megatron: same as --deterministic"},
  };
  return flags;
}

}  // namespace switchyard

namespace switchyard::detail {
namespace po = boost::program_options;

namespace {

const FlagSpec* find_flag(const std::string& name) {
  for (const FlagSpec& flag : selection_flags()) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

// The selection flags and their values, in order; every other argument is dropped. This is
// done before Boost.Program_options sees the list because, even with allow_unregistered, it
// rejects foreign arguments such as "--data-cache-path=" and lets "--norm" swallow a
// following "--deterministic" as its value; a trainer's argv must never fail on a flag
// Switchyard does not own, nor misread one.
std::vector<std::string> selection_arguments(const std::vector<std::string>& args) {
  std::vector<std::string> selected;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;  // the rest are positional, by convention
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    const auto equals = arg.find('=');
    const FlagSpec* flag =
        find_flag(arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2));
    if (!flag) continue;
    selected.push_back(arg);
    if (!flag->takes_value || equals != std::string::npos) continue;
    if (i + 1 >= args.size() || args[i + 1].compare(0, 2, "--") == 0) {
      throw_invalid_setting("Command line: " + arg + " needs a value (" + flag->help + "), but " +
                            (i + 1 >= args.size() ? std::string("it is the last argument")
                                                  : "it is followed by " + args[i + 1]) +
                            ". Write " + arg + " <value> or " + arg + "=<value>.");
    }
    selected.push_back(args[++i]);
  }
  return selected;
}

po::options_description selection_description() {
  po::options_description description("Switchyard selection flags");
  for (const FlagSpec& flag : selection_flags()) {
    if (flag.takes_value)
      description.add_options()(flag.name.c_str(), po::value<std::string>(), flag.help.c_str());
    else
      description.add_options()(flag.name.c_str(), flag.help.c_str());
  }
  return description;
}

void add_plugin_option(const std::string& text, const std::string& origin, SettingsLayer& layer) {
  const auto equals = text.find('=');
  std::string problem;
  if (equals == std::string::npos) {
    problem = "'" + text + "' has no '='";
  } else if (parse_plugin_option_name(trim(text.substr(0, equals)), &problem)) {
    layer.plugin_options[trim(text.substr(0, equals))] =
        make_setting(trim(text.substr(equals + 1)), Source::CommandLine, origin);
    return;
  }
  throw_invalid_setting("Command line: " + origin + " is not valid: " + problem +
                        ". Expected --plugin-option <plugin>.<key>=<value>, e.g. "
                        "--plugin-option fused.cache_dir=/tmp/sy.");
}

}  // namespace

SettingsLayer read_command_line(const std::vector<std::string>& args) {
  const std::vector<std::string> selected = selection_arguments(args);
  SettingsLayer layer;
  if (selected.empty()) return layer;

  const po::options_description description = selection_description();
  po::parsed_options parsed(&description);
  try {
    // Long options only, "--flag value" or "--flag=value", no abbreviations (Megatron
    // turns argparse's off too): "--norm" must never be guessed from "--norm-k".
    const int style = po::command_line_style::allow_long |
                      po::command_line_style::long_allow_adjacent |
                      po::command_line_style::long_allow_next;
    parsed = po::command_line_parser(selected).options(description).style(style).run();
  } catch (const po::error& e) {
    throw_invalid_setting(std::string("Command line: ") + e.what() + ".");
  }

  MegatronFlags megatron;
  for (const po::option& option : parsed.options) {
    const std::string& name = option.string_key;
    const std::string value = option.value.empty() ? std::string() : trim(option.value.front());
    const std::string origin = "--" + name + (value.empty() ? std::string() : " " + value);
    const FlagSpec* flag = find_flag(name);
    if (flag && flag->takes_value && value.empty()) {
      throw_invalid_setting("Command line: --" + name + " has an empty value; expected " +
                            flag->help + ".");
    }
    const auto setting = [&](const std::string& v) {
      return make_setting(v, Source::CommandLine, origin);
    };
    if (name == "cross-entropy") {
      layer.cross_entropy = setting(value);
    } else if (name == "norm") {
      layer.norm = setting(value);
    } else if (name == "norm-kind" || name == "normalization") {
      layer.norm_kind = setting(canonical_norm_kind(value, "--" + name));
    } else if (name == "plugin-path") {
      for (const std::string& path : split_list(value, ":"))
        layer.plugin_path.push_back(setting(path));
    } else if (name == "config") {
      layer.config_file = setting(value);
    } else if (name == "deterministic" || name == "deterministic-mode") {
      layer.deterministic = setting("1");
    } else if (name == "plugin-option") {
      add_plugin_option(value, origin, layer);
    } else if (name == "log-level") {
      std::string problem;
      if (auto level = parse_log_level(value, "--log-level", &problem))
        layer.log_level = setting(*level);
      else
        layer.warn(problem);
    } else if (name == "cross-entropy-loss-fusion") {
      megatron.loss_fusion = true;
    } else if (name == "cross-entropy-fusion-impl") {
      megatron.fusion_impl = value;
    } else if (name == "transformer-impl") {
      megatron.transformer_impl = value;
    }
  }
  apply_megatron_flags(megatron, layer);
  return layer;
}

}  // namespace switchyard::detail
