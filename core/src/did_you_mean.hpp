// Spelling suggestions for unknown names (backends, SWITCHYARD_* variables, config keys).
#ifndef SWITCHYARD_CORE_DID_YOU_MEAN_HPP
#define SWITCHYARD_CORE_DID_YOU_MEAN_HPP

#include <string>
#include <vector>

namespace switchyard::detail {

// The candidate closest to `word` (case-insensitive edit distance), or "" when none is close
// enough to be a plausible typo.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — ready to append to a message.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace switchyard::detail

#endif
