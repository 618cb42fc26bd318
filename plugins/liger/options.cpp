#include "options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace switchyard::liger {

const char* casting_mode_name(CastingMode mode) {
  return mode == CastingMode::Llama ? "llama" : "gemma";
}

bool parse_casting_mode(const char* value, CastingMode* mode, std::string* problem) {
  if (value == nullptr || value[0] == '\0') return true;
  const std::string text(value);
  if (text == "gemma") {
    *mode = CastingMode::Gemma;
    return true;
  }
  if (text == "llama") {
    *mode = CastingMode::Llama;
    return true;
  }
  *problem = "option liger.casting_mode = \"" + text +
             "\" is not one of \"gemma\" (RMSNorm entirely in float32, rounded once: the "
             "default) or \"llama\" (x-hat rounded to x's dtype before the gamma product, as "
             "Liger's default); fix it or unset it";
  return false;
}

bool parse_lse_square_scale(const char* value, float* scale, std::string* problem) {
  if (value == nullptr || value[0] == '\0') return true;
  errno = 0;
  char* end = nullptr;
  const double parsed = std::strtod(value, &end);
  const bool number = end != value && *end == '\0' && errno == 0;
  if (!number || !std::isfinite(parsed) || parsed < 0.0 ||
      !std::isfinite(static_cast<float>(parsed))) {
    *problem = std::string("option liger.lse_square_scale = \"") + value +
               "\" is not a finite number >= 0 (the z-loss weight: loss += scale * lse^2; "
               "0 turns it off); fix it or unset it";
    return false;
  }
  *scale = static_cast<float>(parsed);
  return true;
}

}  // namespace switchyard::liger
