// Switchyard C++ host API: discover plugins, resolve settings, bind operators.
//
// Thread-safety: a Runtime may be used from several threads (its plugin cache is locked).
// CrossEntropy and Norm objects are immutable once bound; their calls are const and may run
// concurrently from several threads (on different streams / outputs, see loss.h).
// Errors are switchyard::Error, which carries the sy_status.
#ifndef SWITCHYARD_SWITCHYARD_HPP
#define SWITCHYARD_SWITCHYARD_HPP

#include <switchyard/plugin.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace switchyard {

// The version of the core library (and of the `switchyard` CLI).
const char* version() noexcept;

class Error : public std::runtime_error {
 public:
  Error(sy_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  sy_status status() const noexcept { return status_; }

 private:
  sy_status status_;
};

// Name of a status code, e.g. "SY_ERR_UNAVAILABLE".
const char* status_name(sy_status status) noexcept;

// ---- settings --------------------------------------------------------------------------

// Where a resolved value came from, highest precedence first.
enum class Source { Api, CommandLine, Environment, ConfigFile, Default };
const char* source_name(Source source) noexcept;  // "API", "command line", ...

struct Setting {
  std::string value;
  Source source = Source::Default;
  // What exactly set it, for messages: "SWITCHYARD_NORM", "--transformer-impl local",
  // "/etc/sy.ini [norm] backend", "RuntimeOptions::norm", "built-in default".
  std::string origin;
  // Only for a backend chosen by `--transformer-impl local`: used, with a warning, when the
  // backend in `value` is missing or cannot run here. Empty otherwise.
  std::string fallback;

  // "native (environment: SWITCHYARD_CROSS_ENTROPY)"
  std::string describe() const;
};

// What the caller asks for. Every field is optional; an unset field is looked up at lower
// precedence (command line > environment > config file > built-in default).
struct RuntimeOptions {
  // API level (highest precedence).
  std::optional<std::string> cross_entropy;  // backend name or path to a .so
  std::optional<std::string> norm;           // backend name or path to a .so
  std::optional<std::string> norm_kind;      // "LayerNorm" | "RMSNorm" | "L2Norm"
  std::optional<bool> deterministic;
  std::vector<std::string> plugin_path;      // folders or .so files, searched first
  std::optional<std::string> config_file;
  std::map<std::string, std::string> plugin_options;  // "fused.cache_dir" -> "/tmp/c"

  // Command-line arguments: Switchyard's selection flags and Megatron's
  // (--cross-entropy-loss-fusion, --cross-entropy-fusion-impl, --transformer-impl,
  // --normalization). Arguments that are not selection flags are ignored, so a trainer can
  // pass its whole argv (without argv[0]).
  std::vector<std::string> args;

  // The environment to read SWITCHYARD_* from; nullopt = this process's environment.
  std::optional<std::map<std::string, std::string>> environment;
};

// Every resolved value with its source.
struct Settings {
  Setting cross_entropy;                 // default "native"
  Setting norm;                          // default "native"
  Setting norm_kind;                     // default "RMSNorm"
  Setting deterministic;                 // "0" | "1"
  Setting log_level;                     // "trace".."error"|"off", default "warn"
  Setting config_file;                   // "" when none
  std::vector<Setting> plugin_path;      // searched first, in order
  Setting system_path;                   // default <libdir>/switchyard/plugins
  std::vector<Setting> disable;          // globs of plugin names never loaded
  std::map<std::string, Setting> plugin_options;  // "fused.cache_dir" etc.
  std::vector<std::string> warnings;     // what resolution warned about (also logged)
};

// The selection flags RuntimeOptions::args understands (Switchyard's and Megatron's), so a
// command line tool can accept them strictly alongside its own flags.
struct FlagSpec {
  std::string name;        // without dashes: "cross-entropy-fusion-impl"
  bool takes_value = true;  // false for switches such as --cross-entropy-loss-fusion
  std::string help;
};
const std::vector<FlagSpec>& selection_flags();

// Resolves settings from options, command line, environment, config file and defaults.
// Throws Error(SY_ERR_INVALID_ARGUMENT) for values that cannot mean anything (an unknown
// --cross-entropy-fusion-impl with no such plugin is reported at selection instead).
Settings resolve_settings(const RuntimeOptions& options);

// ---- plugins ----------------------------------------------------------------------------

enum class Family { CrossEntropy, Norm };
const char* family_name(Family family) noexcept;  // "cross_entropy" | "norm"

struct FamilyInfo {
  bool offered = false;
  uint32_t dtypes = 0;
  uint32_t devices = 0;
  uint32_t features = 0;
  sy_determinism determinism = SY_DETERMINISM_UNKNOWN;
  int32_t table_struct_size = 0;
};

enum class PluginState {
  Ok,           // loaded, validated, probe() said SY_OK
  Unavailable,  // loaded and valid, but probe() said it cannot run here
  Rejected,     // cannot be used: not a shared object, no entry, bad descriptor, ABI major...
  Crashed,      // loading it killed the child process that tried (listing only)
  Disabled      // matched SWITCHYARD_DISABLE; never opened
};
const char* plugin_state_name(PluginState state) noexcept;  // "ok", "unavailable", ...

struct PluginInfo {
  std::string path;
  std::string file_name;    // base name of path
  std::string name;         // from the descriptor; from the file name when not loaded
  std::string version, vendor, description, build_info;
  int32_t abi_major = 0, abi_minor = 0;
  int32_t descriptor_struct_size = 0;
  PluginState state = PluginState::Rejected;
  std::string reason;       // why not Ok; empty when Ok
  std::vector<std::string> log;  // lines the plugin logged while loading/probing
  FamilyInfo cross_entropy, norm;
};

// One folder (or file) of the search path, and what was found there.
struct SearchLocation {
  std::string path;
  Setting origin;           // which setting put it on the search path
  bool exists = false;
  std::vector<PluginInfo> candidates;  // files named libswitchyard-*.so, in name order
};

// What a family resolves to, and why.
struct Selection {
  Family family = Family::CrossEntropy;
  Setting requested;        // the setting that asked (name or path) and its source
  std::string resolved_name;  // after deprecated-name mapping and fallback
  PluginInfo plugin;        // the plugin that serves it (loaded in this process)
  std::vector<std::string> notes;  // deprecations, fallbacks, determinism warnings
};

class CrossEntropy;
class Norm;

// The entry point. Cheap to construct: it resolves settings; it opens no plugin until one is
// selected, and then only the selected plugin's file.
class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(Runtime&&) noexcept;
  Runtime& operator=(Runtime&&) noexcept;

  const Settings& settings() const;

  // The search path in order, each location with its candidates. With `load`, every
  // candidate is loaded and probed in a child process (a crashing plugin is reported as
  // Crashed and cannot take the caller down); without, only file names are listed.
  std::vector<SearchLocation> discover(bool load = true) const;

  // Loads one plugin (a name on the search path, or a path) in a child process and reports
  // what it offers. Never throws for a bad plugin: the state says what is wrong.
  PluginInfo inspect(const std::string& name_or_path) const;

  // Resolves a family to a plugin, opening only that plugin's file in this process.
  // Throws Error naming the request and its source, every folder searched with its
  // candidates and their skip reasons, the available backends, and the next step.
  Selection select(Family family) const;

  // Selects and binds. Throws Error when the plugin cannot serve `problem` (supports()'s
  // reason), or as select() does.
  CrossEntropy cross_entropy(const sy_ce_problem& problem) const;
  Norm norm(const sy_norm_problem& problem) const;

  // The host table handed to plugins (logging, options). Valid while the Runtime lives.
  const sy_host* host() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What a bound operator reports about its backend.
struct BackendInfo {
  std::string name, version, path, vendor;
  sy_determinism determinism = SY_DETERMINISM_UNKNOWN;
  uint32_t features = 0;
  int32_t forward_collectives = -1;  // -1: not stated by the plugin
  Setting requested;
};

// A cross entropy bound to a backend and a problem. Copyable (shares the backend); keeps the
// plugin's library loaded while any copy lives.
class CrossEntropy {
 public:
  const BackendInfo& backend() const;
  const sy_ce_problem& problem() const;
  int64_t workspace_size() const;  // for the bound problem

  // Calls the plugin. args.problem may be NULL (the bound problem is used). Throw Error.
  void forward(const sy_ce_forward_args& args) const;
  void backward(const sy_ce_backward_args& args) const;
  // Non-throwing forms, for the C API.
  sy_status forward(const sy_ce_forward_args& args, sy_error* err) const noexcept;
  sy_status backward(const sy_ce_backward_args& args, sy_error* err) const noexcept;

  struct State;
  explicit CrossEntropy(std::shared_ptr<const State> state);

 private:
  std::shared_ptr<const State> state_;
};

class Norm {
 public:
  const BackendInfo& backend() const;
  const sy_norm_problem& problem() const;
  int64_t workspace_size() const;

  void forward(const sy_norm_forward_args& args) const;
  void backward(const sy_norm_backward_args& args) const;
  sy_status forward(const sy_norm_forward_args& args, sy_error* err) const noexcept;
  sy_status backward(const sy_norm_backward_args& args, sy_error* err) const noexcept;

  struct State;
  explicit Norm(std::shared_ptr<const State> state);

 private:
  std::shared_ptr<const State> state_;
};

}  // namespace switchyard

#endif  // SWITCHYARD_SWITCHYARD_HPP
