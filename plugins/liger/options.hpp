// The liger plugin's options (read through sy_host.option at the entry point, never getenv):
//   liger.casting_mode      "gemma" (default) or "llama": how RMSNorm rounds (README.md).
//   liger.lse_square_scale  Liger's z-loss weight, a finite number >= 0 (default 0 = off).
// Pure parsing, no host or device access, so that the tests can drive every branch.
#ifndef SWITCHYARD_LIGER_OPTIONS_HPP
#define SWITCHYARD_LIGER_OPTIONS_HPP

#include <string>

namespace switchyard::liger {

enum class CastingMode { Gemma, Llama };

struct Options {
  CastingMode casting_mode = CastingMode::Gemma;
  float lse_square_scale = 0.0f;
};

const char* casting_mode_name(CastingMode mode);

// NULL or "" leaves the default. On a bad value: false, with a sentence naming the option, the
// value and what is accepted in *problem.
bool parse_casting_mode(const char* value, CastingMode* mode, std::string* problem);
bool parse_lse_square_scale(const char* value, float* scale, std::string* problem);

}  // namespace switchyard::liger

#endif
