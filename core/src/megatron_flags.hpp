// Megatron-LM's selection flags, mapped to Switchyard backends so that a Megatron trainer's
// argv keeps its meaning:
//
//   --cross-entropy-loss-fusion absent                 -> cross entropy "native"
//     (a --cross-entropy-fusion-impl without it is ignored, as in Megatron, with a warning)
//   --cross-entropy-loss-fusion [--cross-entropy-fusion-impl native] -> "fused"
//   --cross-entropy-loss-fusion --cross-entropy-fusion-impl te       -> "te"
//                                                      ... liger     -> "liger"
//                                                      ... <plugin>  -> that plugin
//   --transformer-impl local              -> norm "apex", falling back to "native"
//   --transformer-impl transformer_engine -> norm "te"
//
// (--normalization is a plain synonym of --norm-kind and is read with it.)
#ifndef SWITCHYARD_CORE_MEGATRON_FLAGS_HPP
#define SWITCHYARD_CORE_MEGATRON_FLAGS_HPP

#include "settings_layer.hpp"

#include <optional>
#include <string>

namespace switchyard::detail {

struct MegatronFlags {
  bool loss_fusion = false;                     // --cross-entropy-loss-fusion
  std::optional<std::string> fusion_impl;       // --cross-entropy-fusion-impl
  std::optional<std::string> transformer_impl;  // --transformer-impl
};

// Sets layer.cross_entropy / layer.norm from the Megatron flags, unless Switchyard's own
// --cross-entropy / --norm already set them (then it warns that those win). Throws Error
// for a value Megatron itself would refuse, listing the known values.
void apply_megatron_flags(const MegatronFlags& flags, SettingsLayer& layer);

}  // namespace switchyard::detail

#endif
