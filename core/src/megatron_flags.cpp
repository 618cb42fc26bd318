// Maps Megatron-LM's selection flags to Switchyard backends (see megatron_flags.hpp).
#include "megatron_flags.hpp"

#include "backend_names.hpp"
#include "did_you_mean.hpp"
#include "setting_values.hpp"

namespace switchyard::detail {
namespace {

const std::vector<std::string>& fusion_impls() {
  static const std::vector<std::string> impls{"native", "te", "liger"};
  return impls;
}

const std::vector<std::string>& transformer_impls() {
  static const std::vector<std::string> impls{"local", "transformer_engine"};
  return impls;
}

void check_fusion_impl(const std::string& impl) {
  if (valid_plugin_name(impl)) return;
  throw_invalid_setting("--cross-entropy-fusion-impl '" + impl +
                        "' is not a backend name: expected native, te, liger or the name of "
                        "an installed plugin ([a-z0-9_]+)" +
                        did_you_mean(impl, fusion_impls()) +
                        ". To load a plugin from a file, pass --cross-entropy <path>.");
}

std::optional<Setting> cross_entropy_from(const MegatronFlags& flags) {
  if (flags.fusion_impl) check_fusion_impl(*flags.fusion_impl);
  if (!flags.loss_fusion) {
    if (!flags.fusion_impl) return std::nullopt;
    return make_setting("native", Source::CommandLine,
                        "--cross-entropy-fusion-impl " + *flags.fusion_impl +
                            " without --cross-entropy-loss-fusion");
  }
  std::string origin = "--cross-entropy-loss-fusion";
  // Megatron's default implementation is "native", i.e. its fused (JIT) kernels.
  const std::string impl = flags.fusion_impl.value_or("native");
  if (flags.fusion_impl) origin += " --cross-entropy-fusion-impl " + impl;
  return make_setting(impl == "native" ? "fused" : impl, Source::CommandLine, origin);
}

std::optional<Setting> norm_from(const MegatronFlags& flags) {
  if (!flags.transformer_impl) return std::nullopt;
  const std::string& impl = *flags.transformer_impl;
  const std::string origin = "--transformer-impl " + impl;
  if (impl == "transformer_engine") return make_setting("te", Source::CommandLine, origin);
  if (impl == "local") {
    // Megatron's local implementation uses Apex's fused norms when Apex is installed and
    // torch's otherwise; the runtime does the same, with a warning.
    Setting setting = make_setting("apex", Source::CommandLine, origin);
    setting.fallback = "native";
    return setting;
  }
  throw_invalid_setting("--transformer-impl '" + impl + "' is not valid: expected " +
                        join_choices(transformer_impls()) +
                        did_you_mean(impl, transformer_impls()) + ".");
}

}  // namespace

void apply_megatron_flags(const MegatronFlags& flags, SettingsLayer& layer) {
  if (std::optional<Setting> mapped = cross_entropy_from(flags)) {
    if (layer.cross_entropy) {
      layer.warn(layer.cross_entropy->origin + " overrides " + mapped->origin + " (which means '" +
                 mapped->value + "').");
    } else {
      if (!flags.loss_fusion) {
        layer.warn("--cross-entropy-fusion-impl " + *flags.fusion_impl +
                   " has no effect without --cross-entropy-loss-fusion (as in Megatron): cross "
                   "entropy is 'native'. Add --cross-entropy-loss-fusion to use the fused path.");
      }
      layer.cross_entropy = std::move(mapped);
      layer.cross_entropy_from_megatron = true;
    }
  }
  if (std::optional<Setting> mapped = norm_from(flags)) {
    if (layer.norm) {
      layer.warn(layer.norm->origin + " overrides " + mapped->origin + " (which means '" +
                 mapped->value + "').");
    } else {
      layer.norm = std::move(mapped);
      layer.norm_from_megatron = true;
    }
  }
}

}  // namespace switchyard::detail
