// `switchyard inspect <name|path>`: everything the core can learn about one plugin.
#include "child_process.hpp"
#include "commands.hpp"
#include "describe.hpp"
#include "output.hpp"

#include <chrono>
#include <cstddef>
#include <iostream>
#include <sstream>

namespace po = boost::program_options;

namespace switchyard::cli {

namespace {

// The ABI minor whose struct a struct_size matches, for "96 bytes (ABI 1.1)".
template <class T>
std::string struct_size_text(int32_t size, size_t v1_0_size) {
  std::string text = std::to_string(size) + " bytes";
  if (size <= 0) return "not reported";
  if (static_cast<size_t>(size) == sizeof(T))
    text += " (ABI " + std::to_string(SY_ABI_MAJOR) + "." + std::to_string(SY_ABI_MINOR) + ")";
  else if (static_cast<size_t>(size) == v1_0_size)
    text += " (ABI 1.0)";
  else if (static_cast<size_t>(size) > sizeof(T))
    text += " (newer than this host's " + std::to_string(sizeof(T)) + ")";
  else
    text += " (older than this host's " + std::to_string(sizeof(T)) + ")";
  return text;
}

// Sizes of the structs as ABI 1.0 had them (before 1.1 appended its fields).
constexpr size_t kPluginSizeV10 = offsetof(sy_plugin, build_info);
constexpr size_t kCrossEntropySizeV10 = offsetof(sy_cross_entropy, forward_collectives);
constexpr size_t kNormSizeV10 = sizeof(sy_norm);

// A small problem the plugin can be asked about, to learn how many collectives one forward
// issues (the ABI states it per problem). Tensor parallel over two ranks when the plugin
// offers it, on the first device and dtype it claims.
sy_ce_problem probe_problem(const FamilyInfo& info) {
  sy_ce_problem problem{};
  problem.struct_size = sizeof problem;
  const bool tensor_parallel = (info.features & SY_CE_FEATURE_TENSOR_PARALLEL) != 0;
  problem.rows = 8;
  problem.vocab_size = 1024;
  problem.tp_size = tensor_parallel ? 2 : 1;
  problem.vocab_local = problem.vocab_size / problem.tp_size;
  problem.vocab_start = 0;
  problem.logits_dtype = (info.dtypes & SY_DTYPE_F32)    ? DLDataType{kDLFloat, 32, 1}
                         : (info.dtypes & SY_DTYPE_BF16) ? DLDataType{kDLBfloat, 16, 1}
                                                         : DLDataType{kDLFloat, 16, 1};
  problem.grad_dtype = problem.logits_dtype;
  problem.label_dtype = DLDataType{kDLInt, 64, 1};
  problem.device = DLDevice{(info.devices & SY_DEVICE_BIT(kDLCPU)) ? kDLCPU : kDLCUDA, 0};
  problem.smoothing = SY_SMOOTHING_MEGATRON;
  problem.ignore_index = -100;
  return problem;
}

// How long binding the probe problem may take in its child (a CUDA plugin's first use of the
// device included) before it is killed.
constexpr std::chrono::seconds kBindTimeout{20};

// "3 per forward (tp_size 2, float32, cpu)", or why it is not known. Binding loads the plugin
// in the process that binds, and calls its supports() and workspace_size(): in a child, so
// that a plugin that crashes or hangs there cannot take `inspect` down; asked only of a plugin
// that already loaded cleanly in the probe's child.
std::string forward_collectives_text(const RuntimeOptions& base, const PluginInfo& plugin) {
  if (!plugin.cross_entropy.offered) return "";
  if (!SY_HAS_FIELD(sy_cross_entropy, forward_collectives,
                    static_cast<size_t>(plugin.cross_entropy.table_struct_size)))
    return "not stated (the table predates ABI 1.1)";
  if (plugin.state != PluginState::Ok) return "not determined (the plugin cannot run here)";
  const sy_ce_problem problem = probe_problem(plugin.cross_entropy);
  const ChildResult child = run_in_child(
      [&]() -> std::string {
        try {
          RuntimeOptions options = base;
          options.cross_entropy = plugin.path;
          options.args.clear();
          const Runtime runtime(options);
          const CrossEntropy bound = runtime.cross_entropy(problem);
          const int32_t count = bound.backend().forward_collectives;
          if (count < 0) return "not stated";
          return std::to_string(count) + " per forward (tp_size " + std::to_string(problem.tp_size) +
                 ", " + (problem.logits_dtype.code == kDLBfloat   ? "bfloat16"
                  : problem.logits_dtype.bits == 32 ? "float32"
                                                    : "float16") + ", " +
                 (problem.device.device_type == kDLCPU ? "cpu" : "cuda") + ")";
        } catch (const std::exception& e) {
          return std::string("not determined: ") + e.what();
        }
      },
      kBindTimeout);
  if (!child.error.empty()) return "not determined: " + child.error;
  if (child.timed_out)
    return "not determined: binding a problem did not finish within " +
           std::to_string(kBindTimeout.count()) + " s; the plugin was stopped there";
  if (child.signal != 0)
    return "not determined: the plugin crashed while binding a problem (" +
           signal_text(child.signal) + "): its supports() or workspace_size() kills the process";
  if (child.output.empty()) return "not determined: binding a problem ended without an answer";
  return child.output;
}

void print_family(std::ostream& out, Family family, const FamilyInfo& info,
                  const std::string& collectives) {
  out << family_name(family) << '\n';
  if (!info.offered) {
    out << "  not offered\n";
    return;
  }
  std::vector<std::pair<std::string, std::string>> fields = {
      {"dtypes", join(dtype_names(info.dtypes))},
      {"devices", join(device_names(info.devices))},
      {"features", info.features ? join(feature_names(family, info.features)) : "none"},
      {"determinism", determinism_name(info.determinism)},
  };
  if (family == Family::CrossEntropy) fields.emplace_back("forward collectives", collectives);
  fields.emplace_back("table struct_size",
                      family == Family::CrossEntropy
                          ? struct_size_text<sy_cross_entropy>(info.table_struct_size,
                                                               kCrossEntropySizeV10)
                          : struct_size_text<sy_norm>(info.table_struct_size, kNormSizeV10));
  print_fields(out, fields, "  ");
}

// The plugin as "key  value" lines, then each family, then its log.
void print_plugin(std::ostream& out, const PluginInfo& plugin, const std::string& collectives) {
  auto or_not_stated = [](const std::string& text) { return text.empty() ? "not stated" : text; };
  const bool loaded = plugin.state == PluginState::Ok || plugin.state == PluginState::Unavailable;
  std::vector<std::pair<std::string, std::string>> fields = {
      {"name", plugin.name},
      {"file", plugin.path.empty() ? "(not found)" : plugin.path},
      {"state", plugin_state_name(plugin.state)},
  };
  if (!plugin.reason.empty()) fields.emplace_back("reason", plugin.reason);
  if (loaded || plugin.abi_major != 0) {
    fields.emplace_back("version", or_not_stated(plugin.version));
    fields.emplace_back("vendor", or_not_stated(plugin.vendor));
    fields.emplace_back("description", or_not_stated(plugin.description));
    fields.emplace_back("build info", or_not_stated(plugin.build_info));
    fields.emplace_back("ABI", std::to_string(plugin.abi_major) + "." +
                                   std::to_string(plugin.abi_minor) + " (this host: " +
                                   std::to_string(SY_ABI_MAJOR) + "." +
                                   std::to_string(SY_ABI_MINOR) + ")");
    fields.emplace_back("descriptor struct_size",
                        struct_size_text<sy_plugin>(plugin.descriptor_struct_size, kPluginSizeV10));
  }
  print_fields(out, fields);
  if (loaded) {
    out << '\n';
    print_family(out, Family::CrossEntropy, plugin.cross_entropy, collectives);
    out << '\n';
    print_family(out, Family::Norm, plugin.norm, collectives);
  }
  out << "\nlog (" << plugin.log.size() << (plugin.log.size() == 1 ? " line" : " lines") << ")\n";
  for (const auto& line : plugin.log) out << "  " << line << '\n';
}

}  // namespace

int cmd_inspect(const Args& args) {
  po::options_description own("inspect options");
  own.add_options()("plugin", po::value<std::string>(),
                    "a plugin name on the search path, or a path to a .so");
  po::positional_options_description positional;
  positional.add("plugin", 1);
  po::variables_map vm;
  RuntimeOptions options;
  if (!parse_command_line("inspect", args, own, vm, options, &positional)) return 2;
  if (vm.count("help")) {
    std::cout << "Loads one plugin in a child process and shows everything it reports: the\n"
                 "descriptor, ABI version and struct sizes, per family the dtypes, devices,\n"
                 "features and determinism, build information, its state and the lines it\n"
                 "logged. Exit status: 0 for ok, unavailable and disabled; 1 when the plugin\n"
                 "is rejected or crashed.\n\n";
    print_command_help(std::cout, "inspect", "<name|path> [options]", own);
    return 0;
  }
  if (!vm.count("plugin"))
    return report_error("inspect",
                        "missing the plugin to inspect: give a name on the search path or a path "
                        "to a .so, e.g. 'switchyard inspect native' (see 'switchyard list')",
                        2);
  const std::string target = vm["plugin"].as<std::string>();

  const Runtime runtime(options);
  const PluginInfo plugin = runtime.inspect(target);
  const bool broken = plugin.state == PluginState::Rejected || plugin.state == PluginState::Crashed;
  const std::string collectives = forward_collectives_text(options, plugin);

  if (vm.count("json")) {
    Json json = plugin_json(plugin);
    json.set("requested", target);
    if (plugin.cross_entropy.offered) json.set("forward_collectives", collectives);
    Json host = Json::object();
    host.set("abi_major", SY_ABI_MAJOR)
        .set("abi_minor", SY_ABI_MINOR)
        .set("descriptor_struct_size", static_cast<int64_t>(sizeof(sy_plugin)))
        .set("cross_entropy_struct_size", static_cast<int64_t>(sizeof(sy_cross_entropy)))
        .set("norm_struct_size", static_cast<int64_t>(sizeof(sy_norm)));
    json.set("host", std::move(host));
    std::cout << json.dump() << '\n';
  } else {
    print_plugin(std::cout, plugin, collectives);
  }
  if (broken)
    report_error("inspect", (plugin.path.empty() ? "'" + target + "'" : plugin.path) +
                                " cannot be used (" + plugin_state_name(plugin.state) +
                                "): " + plugin.reason);
  return broken ? 1 : 0;
}

}  // namespace switchyard::cli
